// tlio/export.hpp: symbol visibility. The library is built with hidden visibility; only
// declarations marked TLIO_API are exported from libtlio.so. The build defines
// TLIO_BUILDING_LIBRARY (export); consumers see the import form (dllimport on Windows, where
// the two differ); TLIO_STATIC_DEFINE, set by the CMake package for a static libtlio, empties it.
#pragma once

#if defined(TLIO_STATIC_DEFINE)
#define TLIO_API
#elif defined(_WIN32)
#if defined(TLIO_BUILDING_LIBRARY)
#define TLIO_API __declspec(dllexport)
#else
#define TLIO_API __declspec(dllimport)
#endif
#else
#define TLIO_API __attribute__((visibility("default")))
#endif
