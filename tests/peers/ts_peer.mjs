// MCP test peer on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0).
// Serves the 2026-07-28 ("modern") era, optionally also the legacy (initialize) era.
//
// usage: node ts_peer.mjs stdio-modern            # serveStdio(factory, {legacy:'reject'})
//        node ts_peer.mjs stdio-dual              # serveStdio(factory, {legacy:'serve'})  (SDK default)
//        node ts_peer.mjs http-modern [--port N]  # createMcpHandler(factory, {legacy:'reject'}) on 127.0.0.1:N/mcp
//        node ts_peer.mjs http-dual   [--port N]  # createMcpHandler(factory)  (legacy served *stateless*)
//        node ts_peer.mjs http-sessions [--port N] # legacy requests on sessionful transports (a
//                                                  # session per initialize), modern ones on createMcpHandler
//   extra flags: --json (responseMode:'json'), --sse (responseMode:'sse'); default 'auto';
//                --live: also the tools `toggle` and (while toggled on) `extra`;
//                --resources: resources, a template, subscriptions and prompts (below).
//
// Needs (from this file's directory or with NODE_PATH):
//   npm install --prefix <dir> @modelcontextprotocol/server@2.4.0 @modelcontextprotocol/node@2.1.2 zod@4.6.7
//   and run with:  PEER_NODE_MODULES=<dir>/node_modules node ts_peer.mjs ...
//   (ESM ignores NODE_PATH, so this file resolves the packages itself from $PEER_NODE_MODULES,
//   default ./node_modules.) Binds 127.0.0.1 only.
//
// Tools:
//   echo {text}            plain result
//   ask {}                 one form question "Who are you?" {name:string (required), age:integer}
//                          modern: inputRequired(...)   legacy: ctx.mcpReq.elicitInput(...) (a real push)
//   ask_push {}            same question, ALWAYS ctx.mcpReq.elicitInput(...) (push-style: the
//                          handshake era only; on the call's own stream over HTTP)
//   ask_shim {}            same question but ALWAYS returns inputRequired(...): on a legacy stdio
//                          connection the SDK's "legacy shim" turns it into a real elicitation/create push.
//   ask_two {}             two questions in ONE round: keys "name" and "confirm"
//   ask_forever {}         never completes: answers every round with a new input_required (round n in requestState)
//   ask_url {url?}         URL-mode question. modern: inputRequired.elicitUrl; legacy: throws
//                          UrlElicitationRequiredError (-32042) unless the retry is "after" (arg done:true)
//   state_only {}          first round returns input_required with ONLY requestState (no inputRequests)
//   slow {steps, ms}       sends notifications/progress (when _meta.progressToken is given) then completes;
//                          logs "slow aborted" to stderr when cancelled
//   region {region, query} inputSchema property region carries "x-mcp-header":"Region" (SEP-2243)
//   toggle {}              (--live) registers the tool `extra` or removes it: the SDK's own
//                          sendToolListChanged (registerTool / RegisteredTool.remove), and over
//                          HTTP the handler's notify.toolsChanged() for subscriptions/listen
//   extra {}               (--live, while toggled on) "extra ok"
// With --resources (capabilities resources {subscribe, listChanged}, prompts {listChanged},
// completions):
//   resources config://app (text "app config"), counter://value (text: the counter, process-wide);
//   template greeting://{name} (text "Hello, <name>!", `name` completable from ["Ada","Alan","Bob"]);
//   prompts review-code {language (completable from ["c","go","rust"]), code}: one user text;
//           ask-name {}: MRTR only: inputRequired({who: elicit "Who are you?"}), then
//           "Hello, <name>" (the legacy era never sees it: this peer is run modern-only);
//           bonus {} while toggled on (tool `toggle_prompt`);
//   tools increment {}: counter + 1, then notifications/resources/updated for counter://value
//           (stdio: the pinned instance's sendResourceUpdated, routed onto the listens that
//           asked for it; HTTP: the handler's notify.resourceUpdated);
//         toggle_prompt {}: registers or removes the prompt `bonus` (the SDK's own
//           prompts/list_changed; over HTTP notify.promptsChanged()).
import { createRequire } from 'node:module';
import http from 'node:http';
import path from 'node:path';

const nm = process.env.PEER_NODE_MODULES || path.join(process.cwd(), 'node_modules');
const require = createRequire(path.join(nm, 'x.js'));
const imp = (p) => import(require.resolve(p));
const { McpServer, createMcpHandler, inputRequired, acceptedContent, UrlElicitationRequiredError, isLegacyRequest,
  ResourceTemplate, completable } = await imp('@modelcontextprotocol/server');
const { serveStdio } = await imp('@modelcontextprotocol/server/stdio');
const { toNodeHandler, toWebRequest, NodeStreamableHTTPServerTransport } = await imp('@modelcontextprotocol/node');
const { randomUUID } = await import('node:crypto');
const z = await imp('zod/v4');

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Your name' },
    age: { type: 'integer', description: 'Your age', default: 30 }
  },
  required: ['name']
};
const CONFIRM = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };

// --live: whether `extra` is listed, for every instance (HTTP makes one per request).
const live = process.argv.includes('--live');
const withResources = process.argv.includes('--resources');
let extraOn = false;
let bonusOn = false;
let counter = 0;
let httpHandler = null;

function factory(rc) {
  const era = rc.era; // 'modern' | 'legacy'
  const caps = withResources
    ? { tools: {}, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, completions: {} }
    : { tools: {} };
  const server = new McpServer({ name: 'ts-peer', version: '1.0.0' }, { capabilities: caps });
  const text = (t) => ({ content: [{ type: 'text', text: t }] });

  server.registerTool('echo', { description: 'Return the text unchanged.', inputSchema: z.object({ text: z.string() }) },
    async ({ text: t }) => text(t));

  server.registerTool('ask', { description: 'Asks who you are (form elicitation).', inputSchema: z.object({}) },
    async (_args, ctx) => {
      if (era === 'legacy') {
        const r = await ctx.mcpReq.elicitInput({ mode: 'form', message: 'Who are you?', requestedSchema: PERSON });
        return text(JSON.stringify({ era, ...r }));
      }
      const r = ctx.mcpReq.inputResponses?.who;
      if (!r) {
        return inputRequired({
          inputRequests: { who: inputRequired.elicit({ message: 'Who are you?', requestedSchema: PERSON }) },
          requestState: 'ask-1'
        });
      }
      return text(JSON.stringify({ era, requestState: ctx.mcpReq.requestState() ?? null, ...r }));
    });

  server.registerTool('ask_push', { description: 'Asks who you are (push-style).', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const r = await ctx.mcpReq.elicitInput({ mode: 'form', message: 'Who are you?', requestedSchema: PERSON },
        { relatedRequestId: ctx.mcpReq.id });
      return text(JSON.stringify({ era, ...r }));
    });

  server.registerTool('ask_shim', { description: 'Asks via inputRequired in both eras (legacy shim).', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const r = ctx.mcpReq.inputResponses?.who;
      if (!r) return inputRequired({ inputRequests: { who: inputRequired.elicit({ message: 'Who are you?', requestedSchema: PERSON }) } });
      return text(JSON.stringify({ era, ...r }));
    });

  server.registerTool('ask_two', { description: 'Asks two questions in one round.', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const rs = ctx.mcpReq.inputResponses;
      if (!rs?.name || !rs?.confirm) {
        return inputRequired({
          inputRequests: {
            name: inputRequired.elicit({ message: 'Your name?', requestedSchema: PERSON }),
            confirm: inputRequired.elicit({ message: 'Proceed?', requestedSchema: CONFIRM })
          },
          requestState: 'two-1'
        });
      }
      return text(JSON.stringify({ era, name: rs.name, confirm: rs.confirm }));
    });

  server.registerTool('ask_forever', { description: 'Never stops asking.', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const n = Number(ctx.mcpReq.requestState() ?? 0) + 1;
      return inputRequired({
        inputRequests: { ['q' + n]: inputRequired.elicit({ message: `Question ${n}?`, requestedSchema: CONFIRM }) },
        requestState: String(n)
      });
    });

  server.registerTool('ask_url', { description: 'URL-mode elicitation.', inputSchema: z.object({ url: z.string().optional(), done: z.boolean().optional() }) },
    async ({ url, done }, ctx) => {
      const u = url ?? 'https://example.com/authorize';
      if (era === 'legacy') {
        if (done) return text(JSON.stringify({ era, done: true }));
        throw new UrlElicitationRequiredError([{ mode: 'url', message: 'Please authorize.', url: u, elicitationId: 'el-1' }]);
      }
      const r = ctx.mcpReq.inputResponses?.auth;
      if (!r) return inputRequired({ inputRequests: { auth: inputRequired.elicitUrl({ message: 'Please authorize.', url: u }) }, requestState: 'url-1' });
      return text(JSON.stringify({ era, auth: r }));
    });

  server.registerTool('state_only', { description: 'input_required with requestState only.', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const s = ctx.mcpReq.requestState();
      if (!s) return inputRequired({ requestState: 'come-back' });
      return text(JSON.stringify({ era, requestState: s }));
    });

  server.registerTool('slow', { description: 'Progress notifications, then a result.', inputSchema: z.object({ steps: z.number().int().default(3), ms: z.number().int().default(300) }) },
    async ({ steps, ms }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((res, rej) => {
          const t = setTimeout(res, ms);
          ctx.mcpReq.signal.addEventListener('abort', () => { clearTimeout(t); rej(new Error('aborted')); }, { once: true });
        }).catch((e) => { console.error(`slow aborted at step ${i}`); throw e; });
        if (token !== undefined) {
          await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
        }
      }
      return text(`done after ${steps} steps`);
    });

  server.registerTool('region', {
    description: 'Has an x-mcp-header parameter.',
    inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }), query: z.string() })
  }, async ({ region, query }) => text(`${region}: ${query}`));

  if (live) {
    const addExtra = () => server.registerTool('extra', { description: 'Listed while toggled on.', inputSchema: z.object({}) },
      async () => text('extra ok'));
    let extraTool = extraOn ? addExtra() : null;
    server.registerTool('toggle', { description: 'Adds or removes the tool extra.', inputSchema: z.object({}) },
      async () => {
        extraOn = !extraOn;
        if (extraOn && !extraTool) extraTool = addExtra();
        if (!extraOn && extraTool) { extraTool.remove(); extraTool = null; }
        httpHandler?.notify.toolsChanged();
        return text(`extra ${extraOn ? 'on' : 'off'}`);
      });
  }

  if (withResources) addResources(server, era, text);

  return server;
}

function addResources(server, era, text) {
  server.registerResource('config', 'config://app', { title: 'Application Config', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, text: 'app config' }] }));
  server.registerResource('counter', 'counter://value', { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, text: String(counter) }] }));
  server.registerResource('greeting', new ResourceTemplate('greeting://{name}', {
    list: undefined,
    complete: { name: (v) => ['Ada', 'Alan', 'Bob'].filter((n) => n.startsWith(v)) }
  }), { mimeType: 'text/plain' }, async (uri, { name }) => ({ contents: [{ uri: uri.href, text: `Hello, ${name}!` }] }));
  server.registerPrompt('review-code', {
    title: 'Code Review',
    description: 'Review code',
    argsSchema: z.object({
      language: completable(z.string(), (v) => ['c', 'go', 'rust'].filter((l) => l.startsWith(v))),
      code: z.string()
    })
  }, ({ language, code }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Review this ${language} code: ${code}` } }] }));
  server.registerPrompt('ask-name', { description: 'Asks who you are first (MRTR)' }, async (ctx) => {
    const mreq = ctx?.mcpReq ?? arguments[1]?.mcpReq;
    const r = mreq?.inputResponses?.who;
    if (!r) {
      return inputRequired({ inputRequests: { who: inputRequired.elicit({ message: 'Who are you?', requestedSchema: PERSON }) }, requestState: 'prompt-1' });
    }
    const name = r.action === 'accept' ? r.content?.name : r.action;
    return { messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}` } }] };
  });
  let bonus = bonusOn ? addBonus(server) : null;
  server.registerTool('increment', { description: 'Counter + 1, and an update for counter://value.', inputSchema: z.object({}) },
    async () => {
      counter += 1;
      if (httpHandler) httpHandler.notify.resourceUpdated('counter://value');
      else await server.server.sendResourceUpdated({ uri: 'counter://value' });
      return text(`counter ${counter}`);
    });
  server.registerTool('toggle_prompt', { description: 'Adds or removes the prompt bonus.', inputSchema: z.object({}) },
    async () => {
      bonusOn = !bonusOn;
      if (bonusOn && !bonus) bonus = addBonus(server);
      if (!bonusOn && bonus) { bonus.remove(); bonus = null; }
      httpHandler?.notify.promptsChanged();
      return text(`bonus ${bonusOn ? 'on' : 'off'}`);
    });
}

function addBonus(server) {
  return server.registerPrompt('bonus', { description: 'Listed while toggled on' },
    () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'bonus' } }] }));
}

const mode = process.argv[2] || 'stdio-modern';
const port = process.argv.includes('--port') ? Number(process.argv[process.argv.indexOf('--port') + 1]) : 38500;
const responseMode = process.argv.includes('--json') ? 'json' : process.argv.includes('--sse') ? 'sse' : 'auto';

if (mode === 'stdio-modern' || mode === 'stdio-dual') {
  serveStdio(factory, { legacy: mode === 'stdio-modern' ? 'reject' : 'serve', onerror: (e) => console.error('onerror:', e.message) });
} else if (mode === 'http-modern' || mode === 'http-dual') {
  const handler = createMcpHandler(factory, {
    ...(mode === 'http-modern' ? { legacy: 'reject' } : {}),
    responseMode,
    onerror: (e) => console.error('onerror:', e.message)
  });
  httpHandler = handler;
  const node = toNodeHandler(handler);
  http.createServer((req, res) => {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
    node(req, res);
  }).listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/mcp (${mode}, responseMode=${responseMode})`));
} else if (mode === 'http-sessions') {
  const modern = toNodeHandler(createMcpHandler(factory, { legacy: 'reject', responseMode, onerror: (e) => console.error('onerror:', e.message) }));
  const sessions = new Map();
  http.createServer(async (req, res) => {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString();
    let body;
    try { body = raw ? JSON.parse(raw) : undefined; } catch { body = undefined; }
    if (!(await isLegacyRequest(await toWebRequest(req, body), body))) return modern(req, res, body);
    const sid = req.headers['mcp-session-id'];
    let t = sid && sessions.get(sid);
    if (!t) {
      if (body?.method !== 'initialize') { res.writeHead(sid ? 404 : 400).end(); return; }
      t = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => sessions.set(id, t) });
      t.onclose = () => t.sessionId && sessions.delete(t.sessionId);
      await factory({ era: 'legacy' }).connect(t);
    }
    await t.handleRequest(req, res, body);
  }).listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/mcp (${mode})`));
} else {
  console.error('unknown mode ' + mode);
  process.exit(2);
}
