/* WF_API marks the functions libweft exports; everything else in the library has hidden
 * visibility. While libweft itself is compiled (WEFT_BUILDING) it gives default visibility; in
 * programs that use the library it expands to nothing, as it does for a static libweft
 * (WEFT_STATIC: the CMake package and weft.pc define it when the installed library is static). */
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
