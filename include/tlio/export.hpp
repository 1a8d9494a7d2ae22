// tlio/export.hpp: symbol visibility. The library is built with hidden visibility;
// only declarations marked TLIO_API are exported from libtlio.so.
#pragma once

#if defined(TLIO_STATIC_DEFINE)
#define TLIO_API
#elif defined(_WIN32)
#define TLIO_API __declspec(dllexport)
#else
#define TLIO_API __attribute__((visibility("default")))
#endif
