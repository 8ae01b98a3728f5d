print("peerscope: under construction")
