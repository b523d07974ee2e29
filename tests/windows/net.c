/* HTTP and HTTPS from the Windows build, run under Wine against the Windows fixture
 * server's HTTP mode: Windows sockets on both ends, TLS with the trust store of the process
 * (SSL_CERT_FILE) or a per-server `tls.caFile`, and an unknown issuer named in the status.
 *   net URL CA_PEM MODE     MODE: plain (an http:// URL), cafile, env (SSL_CERT_FILE=CA_PEM set
 *                           by the caller), none (neither: the connect fails, saying why)
 * Prints "N passed, M failed". */
#include "check.h"

static const char *url, *ca, *mode;

static char *cfg(int with_ca) {
  char *extra = with_ca ? fmt(",\"tls\":{\"caFile\":\"%s\"}", ca) : fmt("%s", "");
  char *c = fmt("{\"mcpServers\":{\"s\":{\"url\":\"%s\",\"timeout\":20000%s}}}", url, extra);
  free(extra);
  return c;
}

static void test_calls(void) {
  int with_ca = strcmp(mode, "cafile") == 0;
  char *c = cfg(with_ca);
  tn_client *cl = NULL;
  tn_status st = tn_connect(c, NULL, NULL, &cl);
  free(c);
  CHECK(st == TN_OK, "connect: %d %s", st, tn_last_error_message());
  char *s = statuses(cl);
  if (strcmp(mode, "none") == 0) {
    CHECK(contains(s, "unknown issuer") && contains(s, "tls.caFile") && contains(s, "SSL_CERT_FILE"), "%s", s);
  } else {
    CHECK(contains(s, "\"connected\""), "%s", s);
    for (int i = 0; i < 20; i++) {
      char *r = call(cl, "s_echo", "{\"text\":\"over the network\"}");
      CHECK(contains(r, "\"output\":\"over the network\""), "%s", r);
      free(r);
    }
  }
  free(s);
  tn_disconnect(cl);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: net URL CA_PEM MODE\n");
    return 2;
  }
  url = argv[1];
  ca = argv[2];
  mode = argv[3];
  static const tn_test tests[] = {{"calls", test_calls}};
  return run_tests(tests, 1, 1, argv);
}
