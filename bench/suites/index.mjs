// Every suite, in the order a run takes them: the core suites share one runtime seeded once,
// so they come first and in the order their seeding expects; the others start a workerd each.
import append from "./append.mjs";
import artifacts from "./artifacts.mjs";
import billing from "./billing.mjs";
import browser from "./browser.mjs";
import bundle from "./bundle.mjs";
import email from "./email.mjs";
import hops from "./hops.mjs";
import http from "./http.mjs";
import profile from "./profile.mjs";
import refresh from "./refresh.mjs";
import scale from "./scale.mjs";
import turn from "./turn.mjs";
import verify from "./verify.mjs";
import writes from "./writes.mjs";

/** Each: `{ name, description, byDefault, run(ctx) → rows of the results table }`. */
export const SUITES = [
  bundle,
  http,
  refresh,
  writes,
  browser,
  append,
  verify,
  billing,
  artifacts,
  turn,
  email,
  profile,
  scale,
  hops,
];
