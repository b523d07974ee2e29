/* What the benchmark's programs share (bench.h): the fixture's extra arguments, the HTTPS
 * leg's CA file, and dying with a message. Kept apart from the driver (bench/host.c) so that
 * the contenders (bench/ours.c, bench/floor.c) depend on this file, not on the driver that
 * depends on them. */
#include "bench.h"
#include <stdarg.h>

const char *const *fixture_args = NULL;
int fixture_nargs = 0;
const char *https_ca_file = NULL;

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}
