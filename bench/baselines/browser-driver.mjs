// Bench-only Worker for the browser command round trip (bench/lib/browser.mjs): a bare
// WebSocket echo (the baseline), an HTTP no-op, and a trigger for one command on a user's
// BrowserSession object (bound across scripts to the service's class as BROWSER_SESSION).
//
//   GET /echo                 WebSocket upgrade; every text frame is sent straight back
//   GET /noop                 200 {}
//   GET /command?user=<id>    BrowserSession(user).command("computer.url") → 200 outcome, 502 when not ok
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/echo") {
      const { 0: client, 1: server } = new WebSocketPair();
      server.accept();
      server.addEventListener("message", (e) => server.send(e.data));
      return new Response(null, { status: 101, webSocket: client });
    }
    if (url.pathname === "/noop") return new Response("{}", { headers: { "Content-Type": "application/json" } });
    if (url.pathname === "/command") {
      const outcome = await env.BROWSER_SESSION.getByName(url.searchParams.get("user")).command("computer.url", {});
      return Response.json(outcome, { status: outcome.ok ? 200 : 502 });
    }
    return new Response("not found", { status: 404 });
  },
};
