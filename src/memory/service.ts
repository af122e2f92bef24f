import { and, desc, eq, exists, inArray, not, notInArray, or, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { agentHandlesQuery, findAgentByHandle } from "../agents/service";
import { type AuditEventInput, auditInBatch, jsonBoolean, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { memoryFacts, memoryFreezes, workspaces } from "../db/schema";
import { type Db, db, parseJsonArray, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { literalLimit } from "../platform/limit";
import { notFound } from "../platform/problem";
import type { Fact, Freeze } from "./schemas";

/** Facts kept per user; remembering one more drops the oldest (docs/memory.md). */
export const FACTS_PER_USER = 200;

/** Whose memory, and which agent is asking: its every handle, so a renamed agent stays frozen. */
export type MemoryOwner = { workspaceId: string; userId: string };
export type AskingAgent = { slug: string; handles: readonly string[] };

type FactRecord = typeof memoryFacts.$inferSelect;
type FreezeRecord = typeof memoryFreezes.$inferSelect;

const toFact = (r: FactRecord): Fact => ({
  id: r.id,
  content: r.content,
  agent_slug: r.agentSlug,
  created_at: r.createdAt,
});

const toFreeze = (r: FreezeRecord): Freeze => ({
  agent_slug: r.agentSlug,
  frozen: true,
  ...(r.reason ? { reason: r.reason } : {}),
  created_at: r.createdAt,
});

const ownedBy = (table: typeof memoryFacts | typeof memoryFreezes, owner: MemoryOwner) =>
  and(eq(table.workspaceId, owner.workspaceId), eq(table.userId, owner.userId));

/** The condition "the user froze this agent (under any of its handles)", for use inside a statement. */
function frozenFor(d: Db, owner: MemoryOwner, agent: AskingAgent) {
  return exists(freezeOf(d, owner, agent));
}

const handlesOf = (agent: AskingAgent) => [...new Set([agent.slug, ...agent.handles])];

// ---- facts ----

/** The user's facts, newest first (ids are time-ordered). */
export async function listFacts(env: Env, owner: MemoryOwner): Promise<Fact[]> {
  const rows = await db(env)
    .select()
    .from(memoryFacts)
    .where(ownedBy(memoryFacts, owner))
    .orderBy(desc(memoryFacts.id))
    .limit(literalLimit(FACTS_PER_USER));
  return rows.map(toFact);
}

/** Deletes one of the user's own facts; anyone else's (or an unknown id) is a 404. */
export async function deleteFact(env: Env, owner: MemoryOwner, id: string, event: AuditEventInput): Promise<Fact> {
  const d = db(env);
  const mine = and(eq(memoryFacts.id, id), ownedBy(memoryFacts, owner));
  const agentSlug = d.select({ s: memoryFacts.agentSlug }).from(memoryFacts).where(mine);
  const [, [row]] = await d.batch([
    // Written first, while the fact (and so its agent) is still there.
    auditInBatch(env, event, { onlyIf: exists(agentSlug), detailsFromSql: { agent_slug: sql`(${agentSlug})` } }),
    d.delete(memoryFacts).where(mine).returning(),
  ]);
  if (!row) throw notFound("No such fact");
  return toFact(row);
}

/**
 * Stores a fact about the user, tagged with the agent, unless the user froze that agent: the
 * freeze is checked in the insert itself, so a freeze that lands mid-turn is never overtaken.
 * Keeps the newest `FACTS_PER_USER` facts. Returns null when the agent is frozen.
 */
export async function rememberFact(
  env: Env,
  owner: MemoryOwner,
  agent: AskingAgent,
  content: string,
  event: (factId: string) => AuditEventInput,
): Promise<Fact | null> {
  const d = db(env);
  const id = newId();
  const now = nowIso();
  const [inserted] = await d.batch([
    d
      .insert(memoryFacts)
      .select(
        sql`SELECT ${id}, ${owner.workspaceId}, ${owner.userId}, ${agent.slug}, ${content}, ${now} WHERE NOT ${frozenFor(d, owner, agent)}`,
      )
      .returning(),
    // Only when the fact was stored (a freeze stops both).
    auditInBatch(env, event(id), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    d
      .delete(memoryFacts)
      .where(
        and(
          ownedBy(memoryFacts, owner),
          notInArray(
            memoryFacts.id,
            d
              .select({ id: memoryFacts.id })
              .from(memoryFacts)
              .where(ownedBy(memoryFacts, owner))
              .orderBy(desc(memoryFacts.id))
              .limit(literalLimit(FACTS_PER_USER)),
          ),
        ),
      ),
  ]);
  const row = inserted[0];
  return row ? toFact(row) : null;
}

/** A freeze of the agent by the user, if any (one row at most). */
function freezeOf(d: Db, owner: MemoryOwner, agent: AskingAgent) {
  return d
    .select({ agentSlug: memoryFreezes.agentSlug })
    .from(memoryFreezes)
    .where(and(ownedBy(memoryFreezes, owner), inArray(memoryFreezes.agentSlug, handlesOf(agent))))
    .limit(literalLimit(1));
}

/** The user's facts for the agent to rank, or null when the user froze the agent. One consistent read. */
export async function factsForAgent(env: Env, owner: MemoryOwner, agent: AskingAgent): Promise<Fact[] | null> {
  const d = db(env);
  const [freeze, rows] = await d.batch([
    freezeOf(d, owner, agent),
    d
      .select()
      .from(memoryFacts)
      .where(ownedBy(memoryFacts, owner))
      .orderBy(desc(memoryFacts.id))
      .limit(literalLimit(FACTS_PER_USER)),
  ]);
  return freeze.length ? null : rows.map(toFact);
}

type Bindable = SQL | SQLiteColumn | Placeholder;

/**
 * What the memory tools of a turn ask about its agent, as two columns of a statement prepared
 * once (placeholders `workspaceId` and `userId`): the handles of the agent `agent` selects (a
 * JSON array), and whether the user froze it under any of them. Read with `askingAgentFrom`.
 */
export function askingAgentColumns(d: Db, agent: { id: Bindable; slug: Bindable }) {
  const workspaceId = sql.placeholder("workspaceId");
  const handles = agentHandlesQuery(d, workspaceId, agent.id);
  const freeze = d
    .select({ one: sql`1` })
    .from(memoryFreezes)
    .where(
      and(
        eq(memoryFreezes.workspaceId, workspaceId),
        eq(memoryFreezes.userId, sql.placeholder("userId")),
        or(eq(memoryFreezes.agentSlug, agent.slug), inArray(memoryFreezes.agentSlug, handles)),
      ),
    );
  return {
    handles: sql<string>`(SELECT json_group_array(handle) FROM ${handles})`,
    frozen: sql<number>`${exists(freeze)}`,
  };
}

/** What the memory tools of a turn need: the agent with every handle it holds, and whether the user froze it. */
export type AskingAgentState = { agent: AskingAgent; frozen: boolean };

/** `askingAgentColumns`' values, for the agent whose slug is `slug`. */
export const askingAgentFrom = (slug: string, read: { handles: string; frozen: number }): AskingAgentState => ({
  agent: { slug, handles: parseJsonArray(read.handles) },
  frozen: Boolean(read.frozen),
});

/**
 * Where a turn's caller puts `askingAgentFrom`'s answer in the turn's `prefetched` (read in the
 * caller's own statement, before the room), so the tools ask D1 nothing more.
 */
export const ASKING_AGENT = "memory.askingAgent";

const askingStatement = preparedFor((d) =>
  d
    .select(askingAgentColumns(d, { id: sql.placeholder("agentId"), slug: sql.placeholder("slug") }))
    .from(workspaces)
    .where(eq(workspaces.id, sql.placeholder("workspaceId")))
    .prepare(),
);

/** `askingAgentColumns` on their own: one round trip. */
export async function askingAgentOf(
  env: Env,
  owner: MemoryOwner,
  agent: { id: string; slug: string },
): Promise<AskingAgentState> {
  const read = await askingStatement(env).get({
    workspaceId: owner.workspaceId,
    userId: owner.userId,
    agentId: agent.id,
    slug: agent.slug,
  });
  return askingAgentFrom(agent.slug, read ?? { handles: "[]", frozen: 0 });
}

// ---- ranking ----

const STOPWORDS = new Set(
  (
    "a an and are as at be but by can do does did for from had has have how i if in into is it its me my mine " +
    "no not of on or our so than that the their them then there these they this to too was we were what when " +
    "where which who whom why will with you your yours about any all am"
  ).split(" "),
);

/** Lower-cased, accent-free word tokens without stopwords; a plural's trailing "s" is dropped. */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 1 && !STOPWORDS.has(t))
    .map((t) => (t.length > 3 && t.endsWith("s") && !t.endsWith("ss") ? t.slice(0, -1) : t));
}

/**
 * Ranks facts by the query's words they share, each word weighted by how rare it is among
 * the user's facts (a word in every fact says little); ties go to the newest. Facts sharing
 * no word are left out; a query with no words gives the newest facts.
 */
export function rankFacts(facts: readonly Fact[], query: string, limit: number): Fact[] {
  const newestFirst = [...facts].sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
  );
  const terms = [...new Set(tokenize(query))];
  if (terms.length === 0) return newestFirst.slice(0, limit);
  const bags = newestFirst.map((f) => new Set(tokenize(f.content)));
  const weight = new Map(
    terms.map((t) => {
      const df = bags.filter((b) => b.has(t)).length;
      return [t, Math.log(1 + bags.length / Math.max(df, 1))];
    }),
  );
  return newestFirst
    .map((fact, i) => ({ fact, i, score: terms.reduce((s, t) => s + (bags[i]!.has(t) ? weight.get(t)! : 0), 0) }))
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, limit)
    .map((r) => r.fact);
}

// ---- freezes ----

/** The user's freezes, newest first. */
export async function listFreezes(env: Env, owner: MemoryOwner): Promise<Freeze[]> {
  const rows = await db(env)
    .select()
    .from(memoryFreezes)
    .where(ownedBy(memoryFreezes, owner))
    .orderBy(desc(memoryFreezes.createdAt), memoryFreezes.agentSlug);
  return rows.map(toFreeze);
}

/**
 * Freezes an agent (named by its slug or an alias; stored under its current slug) out of the
 * user's memory. Idempotent: a second call keeps the first `created_at` and replaces the reason.
 * `changed` says whether the agent was not frozen before. Unknown agent: 404.
 */
export async function freezeAgent(
  env: Env,
  owner: MemoryOwner,
  handle: string,
  reason: string | undefined,
  event: (agent: { id: string; slug: string }) => AuditEventInput,
): Promise<{ freeze: Freeze; changed: boolean; agentId: string }> {
  const agent = await findAgentByHandle(env, owner.workspaceId, handle);
  if (!agent) throw notFound("No such agent in this workspace");
  const d = db(env);
  const key = and(ownedBy(memoryFreezes, owner), eq(memoryFreezes.agentSlug, agent.slug));
  const frozen = exists(d.select({ one: sql`1` }).from(memoryFreezes).where(key));
  const [, created, [row]] = await d.batch([
    auditInBatch(env, event(agent), { detailsFromSql: { changed: jsonBoolean(not(frozen)) } }),
    d
      .insert(memoryFreezes)
      .values({ ...owner, agentSlug: agent.slug, reason: reason || null, createdAt: nowIso() })
      .onConflictDoNothing()
      .returning({ agentSlug: memoryFreezes.agentSlug }),
    d
      .update(memoryFreezes)
      .set({ reason: reason || null })
      .where(key)
      .returning(),
  ]);
  return { freeze: toFreeze(row!), changed: created.length > 0, agentId: agent.id };
}

/**
 * Unfreezes an agent under every handle it holds. Idempotent, for a slug that names no agent
 * too: it is not frozen. Each call on an agent is recorded (`changed` says whether a freeze was
 * lifted); a slug that names no agent is recorded only when a freeze stored under it (an alias
 * since dropped) was removed, so a caller's arbitrary string never becomes an event's target.
 */
export async function unfreezeAgent(
  env: Env,
  owner: MemoryOwner,
  handle: string,
  event: (agent: { id: string | null; slug: string }) => AuditEventInput,
): Promise<{ agentSlug: string; changed: boolean; agentId: string | null }> {
  const agent = await findAgentByHandle(env, owner.workspaceId, handle);
  const slugs = [...new Set([handle, ...(agent?.handles ?? [])])];
  const d = db(env);
  const removed = sql`changes() > 0`; // right after the delete
  const [deleted] = await d.batch([
    d
      .delete(memoryFreezes)
      .where(and(ownedBy(memoryFreezes, owner), inArray(memoryFreezes.agentSlug, slugs)))
      .returning({ agentSlug: memoryFreezes.agentSlug }),
    // No event for the 404 below: an unknown slug with nothing stored.
    auditInBatch(env, event({ id: agent?.id ?? null, slug: agent?.slug ?? handle }), {
      onlyIf: agent ? sql`1` : removed,
      detailsFromSql: {
        changed: jsonBoolean(removed),
      },
    }),
  ]);
  return { agentSlug: agent?.slug ?? handle, changed: deleted.length > 0, agentId: agent?.id ?? null };
}

// ---- erasure ----

/** Deletes every fact and freeze of the user; counts what went. */
export async function eraseMemory(env: Env, workspaceId: string, userId: string): Promise<Record<string, number>> {
  const d = db(env);
  const owner = { workspaceId, userId };
  const [freezes, facts] = await d.batch([
    d.delete(memoryFreezes).where(ownedBy(memoryFreezes, owner)).returning({ slug: memoryFreezes.agentSlug }),
    d.delete(memoryFacts).where(ownedBy(memoryFacts, owner)).returning({ id: memoryFacts.id }),
  ]);
  return { memory_freezes: freezes.length, memory_facts: facts.length };
}
