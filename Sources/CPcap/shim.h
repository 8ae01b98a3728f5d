#ifndef PEERSCOPE_CPCAP_SHIM_H
#define PEERSCOPE_CPCAP_SHIM_H
#include <pcap/pcap.h>
#ifdef __linux__
/* fstatfs and f_type (Glibc's Swift module does not include it): OutputFile's local file system check. */
#include <sys/vfs.h>
#endif
#endif
