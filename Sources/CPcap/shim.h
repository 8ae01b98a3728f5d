#ifndef PEERSCOPE_CPCAP_SHIM_H
#define PEERSCOPE_CPCAP_SHIM_H
#include <pcap/pcap.h>
#endif
