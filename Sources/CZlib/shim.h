#ifndef PEERSCOPE_CZLIB_SHIM_H
#define PEERSCOPE_CZLIB_SHIM_H
#include <zlib.h>
#endif
