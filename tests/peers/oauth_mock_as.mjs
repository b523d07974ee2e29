// Starts oauth2-mock-server (npm, nobody here wrote it) on 127.0.0.1 with short-lived access
// tokens, for tests/python/test_oauth.py. Prints the issuer URL on the first line, then one JSON
// line per token request with the secret values it carried (so the test can look for them in
// everything the library printed).
//   argv[2]: the lifetime of an access token in seconds (its `exp`);
//   argv[3]: the `expires_in` announced ("honest" = the lifetime, else a number).
import path from "node:path";
const root = process.env.OAUTH_NPM || path.resolve(".cache/peers/oauth-npm");
const { OAuth2Server } = await import(
  path.join(root, "node_modules/oauth2-mock-server/dist/index.mjs")
);
const ttl = Number(process.argv[2] || 2);
const announced = process.argv[3] === undefined || process.argv[3] === "honest" ? ttl : Number(process.argv[3]);
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
server.service.on("beforeTokenSigning", (token) => {
  token.payload.exp = Math.floor(Date.now() / 1000) + ttl;
});
server.service.on("beforeResponse", (resp, req) => {
  const b = req.body || {};
  const basic = (req.headers.authorization || "").replace(/^Basic /, "");
  console.log(JSON.stringify({
    grant_type: b.grant_type, code: b.code, code_verifier: b.code_verifier,
    refresh_token: b.refresh_token, client_secret: b.client_secret, basic,
    issued_refresh_token: resp.body.refresh_token, issued_access_token: resp.body.access_token,
  }));
  resp.body.expires_in = announced;
});
await server.start(0, "127.0.0.1");
console.log(server.issuer.url);
process.on("SIGTERM", async () => { await server.stop(); process.exit(0); });
