/* bcryptprimitives.dll for Wine 8.0, which lacks it: Rust >= 1.78's standard library imports
 * ProcessPrng from this DLL for its random numbers (HashMap keys, ...), so without it every
 * Rust .exe fails to start under Wine ("Library bcryptprimitives.dll ... not found",
 * status c0000135). .ci/cross builds it with mingw and copies it into the Wine prefix's
 * C:\windows\system32, where every process finds it. ProcessPrng is answered by
 * RtlGenRandom (advapi32's SystemFunction036), which Wine has. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x7fffffffu ? 0x7fffffffu : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
