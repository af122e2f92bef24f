// The results table: every figure next to its baseline, the ratio and the target.

const fmt = (v, unit) => {
  if (v === null || v === undefined) return "-";
  if (typeof v === "string") return v;
  if (unit === "KiB") return `${(v / 1024).toFixed(1)} KiB`;
  if (unit === "ms") return `${v.toFixed(v < 1 ? 3 : v < 10 ? 2 : 0)} ms`;
  if (unit === "/s") return `${Math.round(v).toLocaleString("en-US")}/s`;
  return String(v);
};

/**
 * rows: { figure, ours, baseline, baselineName, unit, ratio, target, pass }
 * pass is true / false / null (context only, no target).
 */
export function printTable(rows) {
  const cells = rows.map((r) => [
    r.figure,
    fmt(r.ours, r.unit),
    r.baselineName ? `${fmt(r.baseline, r.unit)} (${r.baselineName})` : fmt(r.baseline, r.unit),
    r.ratio === null || r.ratio === undefined ? "-" : r.ratio.toFixed(2),
    r.target ?? "-",
    r.pass === null || r.pass === undefined ? "context" : r.pass ? "ok" : "MISSED",
  ]);
  const head = ["figure", "ours", "baseline", "ratio", "target", "status"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((v, i) => v.padEnd(widths[i])).join("  ");
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const c of cells) console.log(line(c));
}

/** Two rows for `measureAlternating` results: req/s against the baseline's (with its target) and our cost per request. */
export function throughputRows([figure, costFigure], ours, baseline, baselineName, minRatio) {
  return [
    rateRow(figure, ours, baseline, baselineName, minRatio),
    {
      figure: costFigure,
      ours: `${Math.round(1e6 / ours.rps - 1e6 / baseline.rps)} µs`,
      baseline: `${Math.round(1e6 / baseline.rps)} µs`,
      baselineName: "baseline's whole request",
      ratio: null,
    },
  ];
}

/** A row comparing the req/s of two `measureAlternating` results against a target ratio. */
export function rateRow(figure, ours, baseline, baselineName, minRatio) {
  const ratio = ours.rps / baseline.rps;
  return {
    figure,
    ours: ours.rps,
    baseline: baseline.rps,
    baselineName,
    unit: "/s",
    ratio,
    target: `≥ ${minRatio.toFixed(2)}`,
    pass: ratio >= minRatio,
  };
}

/**
 * A row comparing the workerd CPU per request of two `measureAlternating` results (see
 * `workerdCpuSeconds`), its ratio the baseline's over ours so that, as with req/s, higher is
 * better; null where the CPU could not be read.
 */
export function cpuRow(figure, ours, baseline, baselineName, minRatio = null) {
  if (ours.cpuUs === null || baseline.cpuUs === null) return null;
  const ratio = baseline.cpuUs / ours.cpuUs;
  return {
    figure,
    ours: `${Math.round(ours.cpuUs)} µs`,
    baseline: `${Math.round(baseline.cpuUs)} µs`,
    baselineName,
    unit: "",
    ratio,
    target: minRatio === null ? null : `≥ ${minRatio.toFixed(2)}`,
    pass: minRatio === null ? null : ratio >= minRatio,
  };
}
