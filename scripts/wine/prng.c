/*
 * bcryptprimitives.dll for Wine 8: Go's Windows runtime (1.24 and later)
 * takes its random bytes from ProcessPrng, which Windows 10 exports from
 * bcryptprimitives.dll and Wine 8 does not. This DLL exports it on top of
 * RtlGenRandom (advapi32's SystemFunction036), which Wine has. It is a
 * test harness part only: nothing in the product loads it.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    /* RtlGenRandom takes a ULONG: fill larger requests in slices. */
    const SIZE_T slice = 1u << 30;
    while (length > 0) {
        ULONG n = (ULONG)(length < slice ? length : slice);
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        length -= n;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
