print("peerscope-bench: under construction")
