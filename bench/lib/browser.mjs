// Local-browser command round trip through the BrowserSession object, against a bare
// WebSocket echo through the same workerd. Three latencies, each measured from this process,
// one request at a time, on warm connections:
//   echo     a text frame to a bare WebSocket in a Worker and back (the baseline)
//   http     an HTTP no-op to that Worker (what triggering a command costs by itself)
//   command  HTTP → Worker → BrowserSession.command() → frame to the extension socket held
//            here (connected through the real /v1/agent-browser/connect) → reply → HTTP answer
// command / (http + echo) is how much the object adds beyond the two transports a command
// cannot avoid.

const ws = (url, protocols) =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols);
    socket.addEventListener("open", () => resolve(socket), { once: true });
    socket.addEventListener("error", () => reject(new Error(`WebSocket to ${url} failed`)), { once: true });
  });

const toWs = (u) => u.replace(/^http/, "ws");

async function series(n, warmup, once) {
  for (let i = 0; i < warmup; i++) await once();
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await once();
    samples[i] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  samples.sort();
  const at = (q) => samples[Math.min(n - 1, Math.floor(q * n))];
  return { p50: at(0.5), p99: at(0.99), mean: samples.reduce((a, b) => a + b, 0) / n };
}

/**
 * Connects a fake extension for the user (it answers every command at once), then measures
 * the three series in interleaved rounds so machine noise lands on each alike. Returns, per
 * series, the round with the best p50 (milliseconds), and the number of commands answered.
 */
export async function measureBrowserRoundTrip({ serviceUrl, driverUrl, token, userId, n, rounds }) {
  const warmup = Math.min(200, Math.ceil(n / 5));
  const extension = await ws(toWs(new URL("/v1/agent-browser/connect", serviceUrl).href), [`svc-pat.${token}`]);
  let answered = 0;
  extension.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data);
    if (typeof frame.id === "number") {
      answered++;
      extension.send(
        JSON.stringify({ type: "success", id: frame.id, result: { url: "https://bench.test/", title: "Bench" } }),
      );
    }
  });

  const echo = await ws(toWs(new URL("/echo", driverUrl).href));
  let pendingEcho = null;
  echo.addEventListener("message", () => pendingEcho?.());
  // The echo carries a frame of the size the extension sends back.
  const frame = JSON.stringify({ type: "success", id: 1, result: { url: "https://bench.test/", title: "Bench" } });
  const echoOnce = () =>
    new Promise((resolve) => {
      pendingEcho = resolve;
      echo.send(frame);
    });
  const noopUrl = new URL("/noop", driverUrl);
  const commandUrl = new URL(`/command?user=${encodeURIComponent(userId)}`, driverUrl);
  const httpOnce = async () => {
    const r = await fetch(noopUrl);
    await r.arrayBuffer();
  };
  const commandOnce = async () => {
    const r = await fetch(commandUrl);
    if (r.status !== 200) throw new Error(`browser command failed: ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  };

  const results = { echo: [], http: [], command: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      results.echo.push(await series(n, warmup, echoOnce));
      results.http.push(await series(n, warmup, httpOnce));
      results.command.push(await series(n, warmup, commandOnce));
    }
  } finally {
    extension.close();
    echo.close();
  }
  const best = (list) => list.reduce((a, b) => (b.p50 < a.p50 ? b : a));
  return {
    echo: best(results.echo),
    http: best(results.http),
    command: best(results.command),
    answered,
    expected: rounds * (n + warmup),
  };
}
