/* WF_API marks the library's exported functions; everything else is hidden. */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H
#if defined(WEFT_STATIC)
#define WF_API
#elif defined(WEFT_BUILDING)
#define WF_API __attribute__((visibility("default")))
#else
#define WF_API
#endif
#endif
