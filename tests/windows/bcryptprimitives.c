/* ProcessPrng for Wine 8: Rust's standard library on Windows takes its randomness
 * from bcryptprimitives.dll's ProcessPrng, which Wine 8.0 does not have; this DLL exports it and
 * forwards to advapi32's RtlGenRandom (SystemFunction036), which Wine has. Only for running the
 * tests under Wine (scripts/install-windows.sh builds it into the Wine prefix); never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  for (; len > 0x10000; data += 0x10000, len -= 0x10000)
    if (!SystemFunction036(data, 0x10000)) return FALSE;
  return SystemFunction036(data, (ULONG)len) ? TRUE : FALSE;
}
