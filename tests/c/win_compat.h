/* What the C tests take from POSIX and Windows lacks: built with mingw-w64 and run
 * under Wine, the same tests check the Windows build. Only for the tests. */
#ifndef TN_WIN_COMPAT_H
#define TN_WIN_COMPAT_H
#ifdef _WIN32
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <windows.h>

/* getline(3), enough for the tests: grows *line as needed, returns the length or -1. */
static inline ssize_t tn_getline(char **line, size_t *cap, FILE *f) {
  size_t n = 0;
  int ch;
  if (!*line || *cap < 2) {
    *cap = 256;
    *line = realloc(*line, *cap);
  }
  while ((ch = fgetc(f)) != EOF) {
    if (n + 2 > *cap) {
      *cap *= 2;
      *line = realloc(*line, *cap);
    }
    (*line)[n++] = (char)ch;
    if (ch == '\n') break;
  }
  if (n == 0 && ch == EOF) return -1;
  (*line)[n] = 0;
  return (ssize_t)n;
}
#define getline tn_getline

/* realpath(3) as _fullpath (the file need not exist, which the tests do not rely on). */
#define realpath(path, out) _fullpath((out), (path), 4096)

/* Whether process `pid` exists and has not ended. */
static inline int tn_pid_alive(long pid) {
  HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, (DWORD)pid);
  if (!h) return 0;
  int alive = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
  CloseHandle(h);
  return alive;
}
#endif
#endif
