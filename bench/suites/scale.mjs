// Scale past one database (docs/scale.md): one synthetic weekday of 100 000 active workspaces,
// replayed against the routing plan (one global D1, D1 shards keyed by workspace, an audit object
// per workspace, a room per conversation). Prints each writer class's busiest minute as a share of
// its capacity, the shards the 20 % line and a year of data need, and what a year of data weighs.
// Pure Node: no workerd, deterministic for a seed, a few seconds.
import { envNumber } from "../lib/harness.mjs";

const WORKSPACES = envNumber("SCALE_WORKSPACES", 100_000);
const SEED = envNumber("SCALE_SEED", 28);
/** No writer may be busy for more than this share of its busiest minute. */
const TARGET = 0.2;

// What a writer can do (docs/scale.md, "Capacity"). A D1 database and a Durable Object each run
// one thing at a time, so a writer's load is the busy time it needs per minute.
const MINUTE_MS = 60_000;
const MINUTES = 1440;
/** One statement on a D1 primary: D1's planning figure (1 ms a query, about 1 000 a second). */
const STATEMENT_MS = 1;
/** The share of reads a primary still serves once read replication is on (replicas take the rest). */
const PRIMARY_READ_SHARE = 0.25;
/** An audit event in its workspace's AuditLog: the delivery call, then the append to the chain. */
const DELIVERY_MS = 1;
const APPEND_MS = 0.2;
/** Today's balance check sums every ledger row of the workspace: about 90 ns a row in SQLite. */
const LEDGER_SUM_MS_PER_ROW = 0.00009;
/** A room runs one turn at a time: its storage writes and the turn's own CPU; the shortest turn. */
const ROOM_TURN_MS = 30;
const SHORTEST_TURN_MS = 2_000;
/** The storage ceiling of a D1 database and of a Durable Object, and the line a shard splits at. */
const DATABASE_BYTES = 10e9;
const SHARD_FILL_BYTES = 5e9;
/** A workspace whose year of data would fill half a shard gets a database of its own. */
const OWN_SHARD_BYTES = SHARD_FILL_BYTES / 2;
/** Weekday-equivalents in a year: 250 working days and quiet weekends. */
const YEAR_DAYS = 260;
/** Hash ranges go down to 1/2^SPLIT_DEPTH of the hash space (2 048 shards). */
const SPLIT_DEPTH = 11;

// The population (docs/scale.md, "Usage profile"): members per workspace are heavy-tailed
// (Pareto from 1.5 with α 1.15, rounded, at most 5 000: median 3, mean about 8, a handful at the
// cap); each workspace has an activity factor (log-normal, σ 0.75, mean 1) and a time zone.
const MEMBERS = { scale: 1.5, alpha: 1.15, max: 5000 };
const ACTIVITY_SIGMA = 0.75;
/** UTC offsets in hours, with their share of workspaces. */
const TIME_ZONES = [
  [-8, 0.12],
  [-6, 0.1],
  [-5, 0.18],
  [-3, 0.05],
  [0, 0.12],
  [1, 0.18],
  [2, 0.05],
  [5.5, 0.08],
  [8, 0.07],
  [9, 0.05],
];
/** Activity by local hour: the working day with a lunch dip, evenings, a quiet night (peak/mean 2). */
const HOURLY = [
  0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.4, 1, 1, 1, 1, 0.7, 1, 1, 1, 1, 1, 0.5, 0.3, 0.3, 0.3, 0.1, 0.1,
];

/**
 * One occurrence of each action (docs/scale.md, "Writes per action"): `perMember` or
 * `perWorkspace` occurrences a weekday; `writes`: its write statements today; under the plan,
 * `shard` on the workspace's shard and `global` on the global D1; `reads` of the workspace's
 * data and, under the plan, `globalReads` of the global directory; `events`: audit events (each
 * delivered with a read and a delete of its outbox row); `rows` it leaves, by table; `balance`:
 * checks the credit balance (today a SUM over the workspace's ledger).
 */
const ACTIONS = {
  // Today: room start 2, room end (debit, conversation, participants, event) 4; the credit check
  // is a read (the month's grant and its event, its first turn only, are left out). Plan: the
  // balance is one row kept by the batches that change the ledger, so the end batch updates it.
  // Reads: auth, preflight 4, balance; under the plan, the PAT index on an isolate's cache miss.
  turn: {
    perMember: 20,
    writes: 6,
    shard: 7,
    reads: 6,
    globalReads: 0.3,
    events: 1,
    rows: { credit_ledger: 1 },
    balance: true,
  },
  conversation: {
    perMember: 2,
    writes: 3,
    shard: 3,
    reads: 2,
    events: 1,
    rows: { conversations: 1, conversation_participants: 1 },
  },
  memory: { perMember: 1, writes: 3, shard: 3, reads: 2, events: 1, rows: { memory_facts: 1 } },
  artifact: { perMember: 1, writes: 2, shard: 2, reads: 2, events: 1, rows: { artifacts: 1 } },
  // Inbound row and event 2, triage claim 1 (the credit check is a read); 60 % drafted (reply, state,
  // debit, event 4, plan + the balance row; then the send and its event 2), 40 % closed (state,
  // event 2). The address is routed through the global email-slug directory under the plan.
  email: {
    perMember: 1,
    writes: 3 + 0.6 * 6 + 0.4 * 2,
    shard: 3 + 0.6 * 7 + 0.4 * 2,
    reads: 4,
    globalReads: 1,
    events: 2.6,
    rows: { email_inbound: 1, email_reply: 0.6, credit_ledger: 0.6 },
    balance: true,
  },
  // One OAuth client per member, refreshing hourly through the working day: the rotation batch
  // (claim, two tokens, event) 4; the plan prunes the expired access and rotated refresh tokens.
  refresh: { perMember: 8, writes: 4, shard: 4.5, reads: 1, events: 1, rows: { oauth_tokens: 1 } },
  authorize: { perMember: 0.02, writes: 7, shard: 7, reads: 3, globalReads: 1, events: 2, rows: { oauth_grants: 1 } },
  signIn: { perMember: 0.5, writes: 2, shard: 2, reads: 1, globalReads: 1, events: 1, rows: { sessions: 1 } },
  // `last_used_at`, at most once a minute per credential: the minutes a member's credentials are used.
  touch: { perMember: 60, writes: 1, shard: 1 },
  agentEdit: { perMember: 0.1, writes: 4, shard: 4, reads: 2, events: 1 },
  patCreate: { perMember: 0.01, writes: 2, shard: 2, global: 1, events: 1 },
  read: { perMember: 40, reads: 2, globalReads: 0.3 },
  memberAdd: { perMember: 0.005, writes: 2, shard: 2, global: 1, events: 1, rows: { users: 1 } },
  profileCrawl: { perWorkspace: 1 / 7, writes: 5, shard: 5, reads: 2, events: 2 },
  stripeEvent: { perWorkspace: 1 / 30, writes: 5, shard: 5, reads: 1, globalReads: 1, events: 1 },
  // A new workspace: globally its directory rows (workspace, email slug, first user's address).
  signup: { perWorkspace: 0.01, writes: 12, shard: 12, global: 3, reads: 2, events: 4, rows: { users: 1 } },
};

/** Bytes a row takes with its indexes: 20 000 typical rows inserted into SQLite with migrations/ applied. */
const ROW_BYTES = {
  credit_ledger: 397,
  conversations: 513,
  conversation_participants: 383,
  email_inbound: 1000,
  email_reply: 2267,
  memory_facts: 527,
  artifacts: 601,
  oauth_tokens: 423,
  oauth_grants: 413,
  sessions: 453,
  users: 440,
};
/** An audit event in an AuditLog object, with its indexes (measured the same way). */
const AUDIT_EVENT_BYTES = 1239;
/** How long rows stay under the plan: days (then pruned or rolled up), or at most so many per member. */
const KEPT = {
  credit_ledger: { days: 90 },
  oauth_tokens: { days: 30 },
  sessions: { days: 7 },
  memory_facts: { perMember: 200 },
};
const AREA_OF = {
  credit_ledger: "billing",
  conversations: "conversations",
  conversation_participants: "conversations",
  email_inbound: "email",
  email_reply: "email",
  memory_facts: "memory",
  artifacts: "artifacts",
  oauth_tokens: "oauth",
  oauth_grants: "oauth",
  sessions: "identity",
  users: "identity",
};

/** A seeded generator of uniform numbers in [0, 1) (mulberry32). */
function randomSource(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const normal = (rand) => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());

/** A Poisson count: by inversion below a mean of 30, a rounded normal above. */
function poisson(rand, mean) {
  if (mean <= 0) return 0;
  if (mean >= 30) return Math.max(0, Math.round(mean + Math.sqrt(mean) * normal(rand)));
  const u = rand();
  let k = 0;
  let p = Math.exp(-mean); // the chance of exactly k
  let cumulative = p;
  while (u > cumulative && p > 0) {
    k++;
    p *= mean / k;
    cumulative += p;
  }
  return k;
}

const membersOf = (rand) =>
  Math.min(MEMBERS.max, Math.max(1, Math.round(MEMBERS.scale * (1 - rand()) ** (-1 / MEMBERS.alpha))));

const activityOf = (rand) => Math.exp(ACTIVITY_SIGMA * normal(rand) - ACTIVITY_SIGMA ** 2 / 2);

/** Picks from `[value, weight]` pairs. */
function pick(rand, weighted) {
  let r = rand() * weighted.reduce((total, [, w]) => total + w, 0);
  for (const [value, w] of weighted) {
    r -= w;
    if (r < 0) return value;
  }
  return weighted.at(-1)[0];
}

const sum = (values) => values.reduce((a, b) => a + b, 0);

function maxOf(array) {
  let max = 0;
  for (const v of array) if (v > max) max = v;
  return max;
}

function maxAt(array, indexes) {
  let max = 0;
  for (let k = 0; k < indexes.length; k++) if (array[indexes[k]] > max) max = array[indexes[k]];
  return max;
}

/**
 * A time zone's day: the chance of each UTC minute (the local hour by HOURLY, minutes alike
 * within it), and a table that turns a uniform number into a minute drawn by that chance.
 */
function dayOf(offset) {
  const SLOTS = 1 << 16;
  const total = sum(HOURLY);
  const chance = new Float64Array(MINUTES);
  const draw = new Int16Array(SLOTS);
  let slot = 0;
  let cumulative = 0;
  for (let local = 0; local < MINUTES; local++) {
    const utc = (((local - offset * 60) % MINUTES) + MINUTES) % MINUTES;
    chance[utc] = HOURLY[Math.floor(local / 60)] / 60 / total;
    cumulative += chance[utc];
    const end = Math.min(SLOTS, Math.round(cumulative * SLOTS));
    draw.fill(utc, slot, end);
    slot = end;
  }
  draw.fill(draw[slot - 1], slot);
  return { chance, draw };
}

/** What one occurrence of an action costs each writer, in busy ms. */
function costsOf(action) {
  const { writes = 0, shard = 0, global = 0, reads = 0, globalReads = 0, events = 0 } = action;
  const delivery = 2 * events;
  return {
    shard: (shard + delivery + reads * PRIMARY_READ_SHARE) * STATEMENT_MS,
    global: (global + globalReads * PRIMARY_READ_SHARE) * STATEMENT_MS,
    audit: events * (DELIVERY_MS + APPEND_MS),
    // one database for everything and no replicas (today's balance SUM is counted apart)
    today: (writes + delivery + reads) * STATEMENT_MS,
  };
}

/** Expected occurrences of an action in a weekday of a workspace. */
const meanCount = (action, members, activity) =>
  action.perMember ? action.perMember * members * activity : action.perWorkspace;

/** Per table: rows a weekday writes per member-activity and per workspace, and how long they stay. */
const TABLE_RATES = Object.keys(ROW_BYTES).map((table) => {
  const rate = { table, perMember: 0, perWorkspace: 0, bytes: ROW_BYTES[table], kept: KEPT[table] ?? {} };
  for (const action of Object.values(ACTIONS)) {
    const rows = action.rows?.[table] ?? 0;
    rate.perMember += rows * (action.perMember ?? 0);
    rate.perWorkspace += rows * (action.perWorkspace ?? 0);
  }
  return rate;
});

/** Bytes a workspace keeps after a year under the plan, by table (rows kept per KEPT). */
function yearBytes(members, activity) {
  const bytes = {};
  for (const { table, perMember, perWorkspace, bytes: size, kept } of TABLE_RATES) {
    const days = kept.days ? Math.min(kept.days, 365) * (YEAR_DAYS / 365) : YEAR_DAYS;
    let rows = (perMember * members * activity + perWorkspace) * days;
    if (kept.perMember) rows = Math.min(rows, kept.perMember * members);
    bytes[table] = rows * size;
  }
  return bytes;
}

/** Audit events a workspace writes in a weekday. */
const auditEventsPerDay = (members, activity) =>
  sum(Object.values(ACTIONS).map((a) => (a.events ?? 0) * meanCount(a, members, activity)));

/**
 * Adds one action's day in one workspace to the writers' minutes, and answers how often it
 * happened. It happens a Poisson number of times, each at a minute drawn from the workspace's
 * day; an action frequent enough to fill most minutes is drawn as a Poisson count per minute
 * instead (the same process, fewer draws).
 */
function replayAction(rand, day, mean, cost, loads) {
  const { shard, audit, global, today, touched } = loads;
  const add = (m, times) => {
    shard[m] += times * cost.shard;
    if (cost.audit) {
      if (audit[m] === 0) touched.minutes[touched.count++] = m;
      audit[m] += times * cost.audit;
    }
    if (cost.global) global[m] += times * cost.global;
    today[m] += times * cost.today;
  };
  if (mean >= MINUTES) {
    let total = 0;
    for (let m = 0; m < MINUTES; m++) {
      const times = poisson(rand, mean * day.chance[m]);
      if (times) add(m, times);
      total += times;
    }
    return total;
  }
  const n = poisson(rand, mean);
  for (let i = 0; i < n; i++) add(day.draw[(rand() * 65536) | 0], 1);
  return n;
}

/**
 * Replays the day. Every action of every workspace adds its cost to the writers it touches in
 * its minute. Shard load is kept per 1/2^SPLIT_DEPTH of the hash space (a workspace's place is
 * a uniform hash), so any hash range's load is a sum of those.
 */
function replay(rand) {
  const days = new Map(TIME_ZONES.map(([offset]) => [offset, dayOf(offset)]));
  const finest = 2 ** SPLIT_DEPTH;
  const rangeLoad = Array.from({ length: finest }, () => new Float64Array(MINUTES));
  const rangeBytes = new Float64Array(finest);
  const actions = Object.entries(ACTIONS).map(([name, action]) => ({ name, action, cost: costsOf(action), count: 0 }));
  // Where a workspace's minutes go: its hash range's shard (or a database of its own), its audit
  // object, the global D1 and the one database of today.
  const own = [];
  const ownLoad = new Float64Array(MINUTES);
  const loads = {
    shard: null,
    audit: new Float64Array(MINUTES),
    global: new Float64Array(MINUTES),
    today: new Float64Array(MINUTES),
    /** The minutes the workspace's audit load is not zero in. */
    touched: { minutes: new Int32Array(MINUTES), count: 0 },
  };
  let busiestAudit = { share: 0 };
  let largest = 0; // members of the largest workspace
  let largestSum = 0; // today's balance SUM, in ms, in the workspace with the longest ledger
  let totalMembers = 0;
  let totalBytes = 0;

  for (let w = 0; w < WORKSPACES; w++) {
    const members = membersOf(rand);
    const activity = activityOf(rand);
    const day = days.get(pick(rand, TIME_ZONES));
    const hash = rand();
    totalMembers += members;
    const ledgerRowsInAYear = (ACTIONS.turn.perMember + 0.6 * ACTIONS.email.perMember) * members * activity * YEAR_DAYS;
    largestSum = Math.max(largestSum, ledgerRowsInAYear * LEDGER_SUM_MS_PER_ROW);
    const bytes = sum(Object.values(yearBytes(members, activity)));
    totalBytes += bytes;
    const range = Math.floor(hash * finest);
    const alone = bytes > OWN_SHARD_BYTES;
    if (alone) ownLoad.fill(0);
    else rangeBytes[range] += bytes;
    loads.shard = alone ? ownLoad : rangeLoad[range];
    const { audit, touched } = loads;
    for (let t = 0; t < touched.count; t++) audit[touched.minutes[t]] = 0;
    touched.count = 0;
    for (const a of actions) a.count += replayAction(rand, day, meanCount(a.action, members, activity), a.cost, loads);
    const auditShare = maxAt(audit, touched.minutes.subarray(0, touched.count)) / MINUTE_MS;
    if (auditShare > busiestAudit.share) busiestAudit = { share: auditShare, members, activity };
    largest = Math.max(largest, members);
    if (alone) own.push({ members, activity, peak: peakShare(ownLoad), bytes });
  }
  return {
    shards: shardTree(rangeLoad, rangeBytes),
    globalLoad: loads.global,
    todayLoad: loads.today,
    own,
    byAction: Object.fromEntries(actions.map((a) => [a.name, { count: a.count, shardMs: a.count * a.cost.shard }])),
    busiestAudit,
    largest,
    largestSum,
    totalMembers,
    totalBytes,
  };
}

/**
 * Every hash range of the trie (depth 0: the whole space; depth d: 2^d ranges) with its
 * busiest minute's share and its bytes after a year, folded up from the finest ranges (in
 * place); the whole space's mean share too.
 */
function shardTree(rangeLoad, rangeBytes) {
  const levels = [];
  let loads = rangeLoad;
  let bytes = rangeBytes;
  for (let depth = SPLIT_DEPTH; depth >= 0; depth--) {
    levels[depth] = { peak: loads.map(peakShare), bytes };
    if (depth === 0) {
      levels[0].mean = meanShare(loads[0]);
      break;
    }
    const half = loads.length / 2;
    const parents = Array.from({ length: half }, (_, i) => {
      const parent = loads[2 * i];
      const other = loads[2 * i + 1];
      for (let m = 0; m < MINUTES; m++) parent[m] += other[m];
      return parent;
    });
    bytes = Float64Array.from({ length: half }, (_, i) => bytes[2 * i] + bytes[2 * i + 1]);
    loads = parents;
  }
  return levels;
}

/**
 * The shards a hash-range trie ends with when a range splits in two while `over(range)`: how
 * many, the busiest one's share and the fullest one's bytes.
 */
function splitWhile(levels, over) {
  const leaves = [];
  const visit = (depth, i) => {
    const range = { peak: levels[depth].peak[i], bytes: levels[depth].bytes[i] };
    if (depth < SPLIT_DEPTH && over(range)) {
      visit(depth + 1, 2 * i);
      visit(depth + 1, 2 * i + 1);
    } else leaves.push(range);
  };
  visit(0, 0);
  return { count: leaves.length, peak: maxOf(leaves.map((l) => l.peak)), fullest: maxOf(leaves.map((l) => l.bytes)) };
}

const peakShare = (load) => maxOf(load) / MINUTE_MS;
const meanShare = (load) => sum(load) / MINUTES / MINUTE_MS;
const pct = (share) => `${(share * 100).toFixed(share < 0.01 ? 2 : 1)} %`;
const gb = (bytes) => `${(bytes / 1e9).toFixed(bytes < 1e10 ? 2 : 0)} GB`;

/** A row of the results table: a writer's busiest minute against the 20 % line. */
const writerRow = (figure, share, target = true) => ({
  figure,
  ours: pct(share),
  baseline: pct(TARGET),
  baselineName: "of capacity",
  unit: "",
  ratio: share / TARGET,
  target: target ? "≤ 1.00" : null,
  pass: target ? share <= TARGET : null,
});

const contextRow = (figure, ours, baseline = null) => ({
  figure,
  ours,
  baseline,
  baselineName: "",
  unit: "",
  ratio: null,
  target: null,
  pass: null,
});

/** Data a workspace of this size keeps after a year, by area, and its audit chain. */
function areaLine(members) {
  const byArea = {};
  for (const [table, bytes] of Object.entries(yearBytes(members, 1))) {
    byArea[AREA_OF[table]] = (byArea[AREA_OF[table]] ?? 0) + bytes;
  }
  const audit = auditEventsPerDay(members, 1) * YEAR_DAYS * AUDIT_EVENT_BYTES;
  const parts = Object.entries(byArea).map(([area, bytes]) => `${area} ${(bytes / 1e6).toFixed(2)}`);
  return `${parts.join(", ")}; D1 ${(sum(Object.values(byArea)) / 1e6).toFixed(1)} MB, audit chain ${(audit / 1e6).toFixed(0)} MB`;
}

export default {
  name: "scale",
  description: "100 000 synthetic workspaces' day against the routing plan: each writer's busiest minute",
  byDefault: false,
  async run(ctx) {
    const { step } = ctx;
    step(`scale: ${WORKSPACES.toLocaleString("en-US")} active workspaces, seed ${SEED}, one weekday by the minute`);
    const r = replay(randomSource(SEED));
    step(
      `  ${r.totalMembers.toLocaleString("en-US")} members (mean ${(r.totalMembers / WORKSPACES).toFixed(1)}, largest workspace ${r.largest}); ${sum(Object.values(r.byAction).map((a) => a.count)).toLocaleString("en-US")} actions`,
    );
    const perMember = (f) => sum(Object.values(ACTIONS).map((a) => (a.perMember ?? 0) * f(a)));
    step(
      `  a member's weekday: today ${perMember((a) => (a.writes ?? 0) + 2 * (a.events ?? 0) + (a.reads ?? 0)).toFixed(0)} statements on the one D1; planned ${perMember((a) => (a.shard ?? 0) + 2 * (a.events ?? 0)).toFixed(0)} writes and ${perMember((a) => (a.reads ?? 0) * PRIMARY_READ_SHARE).toFixed(0)} primary reads on its shard, ${perMember((a) => a.events ?? 0).toFixed(1)} audit events`,
    );
    const totalShardMs = sum(Object.values(r.byAction).map((a) => a.shardMs));
    step("  shard busy time by action (share; occurrences in the day):");
    for (const [name, a] of Object.entries(r.byAction).sort((x, y) => y[1].shardMs - x[1].shardMs)) {
      step(`    ${name.padEnd(13)} ${pct(a.shardMs / totalShardMs).padStart(7)}  ${a.count.toLocaleString("en-US")}`);
    }
    step("  a year of data per workspace at activity 1, MB by area:");
    for (const m of [1, 3, 8, 50, 500, MEMBERS.max]) step(`    ${String(m).padStart(4)} members: ${areaLine(m)}`);

    const forWrites = splitWhile(r.shards, (s) => s.peak > TARGET);
    const forStorage = splitWhile(r.shards, (s) => s.bytes > SHARD_FILL_BYTES);
    const plan = splitWhile(r.shards, (s) => s.peak > TARGET || s.bytes > SHARD_FILL_BYTES);
    const ownPeak = maxOf(r.own.map((o) => o.peak));
    const ownBytes = maxOf(r.own.map((o) => o.bytes));
    const overflowing = r.own.filter((o) => o.bytes > DATABASE_BYTES).length;
    const roomBound = ROOM_TURN_MS / SHORTEST_TURN_MS;
    const auditYear =
      auditEventsPerDay(r.busiestAudit.members, r.busiestAudit.activity) * YEAR_DAYS * AUDIT_EVENT_BYTES;
    step(
      `  hashed shards: ${forWrites.count} for the 20 % line (busiest ${pct(forWrites.peak)}), ${forStorage.count} for a year of data under ${gb(SHARD_FILL_BYTES)} each (fullest ${gb(forStorage.fullest)}), ${plan.count} for both`,
    );
    step(
      `  own databases: ${r.own.length} workspaces over ${gb(OWN_SHARD_BYTES)} a year; the largest holds ${gb(ownBytes)} after a year, ${overflowing} pass ${gb(DATABASE_BYTES)} within a year`,
    );
    step(
      `  all D1 data after a year: ${gb(r.totalBytes)}; the busiest audit object (${r.busiestAudit.members} members) grows ${gb(auditYear)} a year`,
    );
    step(`  today's balance SUM over a year of ledger rows, longest ledger: ${(r.largestSum).toFixed(0)} ms a turn`);
    const busiest = Math.max(peakShare(r.globalLoad), plan.peak, ownPeak, r.busiestAudit.share, roomBound);
    return [
      writerRow("scale: one D1 for everything, as today", peakShare(r.todayLoad), false),
      writerRow("scale: global D1 (directory)", peakShare(r.globalLoad)),
      writerRow(`scale: busiest of ${plan.count} hashed shards`, plan.peak),
      writerRow(`scale: busiest own database (of ${r.own.length})`, ownPeak),
      writerRow("scale: busiest audit object", r.busiestAudit.share),
      writerRow("scale: a room, turns back to back (bound)", roomBound),
      writerRow("scale: busiest writer of the plan", busiest),
      contextRow(
        "scale: shards for writes / a year of data",
        `${forWrites.count} / ${forStorage.count}`,
        `${plan.count} + ${r.own.length} own`,
      ),
      contextRow(
        "scale: mean load, global / a hashed shard",
        `${pct(meanShare(r.globalLoad))} / ${pct(r.shards[0].mean / plan.count)}`,
      ),
    ];
  },
};
