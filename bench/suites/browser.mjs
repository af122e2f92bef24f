// The browser command round trip through the BrowserSession object (see lib/browser.mjs),
// against a bare WebSocket echo and an HTTP no-op through the same workerd.
import { measureBrowserRoundTrip } from "../lib/browser.mjs";
import { envNumber } from "../lib/harness.mjs";

const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const SAMPLES = envNumber("BENCH_BROWSER_SAMPLES", 2000);

export default {
  name: "browser",
  description: "browser command round trip through BrowserSession vs a bare WebSocket echo",
  byDefault: true,
  async run(ctx) {
    const { urls, main } = await ctx.core();
    ctx.step(
      `browser command round trip: ${ROUNDS} interleaved rounds × ${SAMPLES} sequential samples of echo, HTTP no-op and command`,
    );
    const r = await measureBrowserRoundTrip({
      serviceUrl: urls.service,
      driverUrl: urls.browser,
      token: main.token,
      userId: main.userId,
      n: SAMPLES,
      rounds: ROUNDS,
    });
    ctx.check(r.answered === r.expected, `the extension answered ${r.answered} commands, expected ${r.expected}`);
    const ms = (x) => `${x.toFixed(3)} ms`;
    for (const name of ["echo", "http", "command"])
      ctx.step(`  ${name}: p50 ${ms(r[name].p50)}, p99 ${ms(r[name].p99)} (best round)`);
    return [
      {
        figure: "browser command round trip p50",
        ours: r.command.p50,
        baseline: r.echo.p50,
        baselineName: "bare WebSocket echo",
        unit: "ms",
        ratio: r.command.p50 / r.echo.p50,
        target: null,
        pass: null,
      },
      {
        figure: "browser command round trip p99",
        ours: r.command.p99,
        baseline: r.echo.p99,
        baselineName: "bare WebSocket echo",
        unit: "ms",
        ratio: r.command.p99 / r.echo.p99,
        target: null,
        pass: null,
      },
      {
        figure: "browser command vs its transports p50",
        ours: r.command.p50,
        baseline: r.http.p50 + r.echo.p50,
        baselineName: "HTTP no-op + echo",
        unit: "ms",
        ratio: r.command.p50 / (r.http.p50 + r.echo.p50),
        target: null,
        pass: null,
      },
    ];
  },
};
