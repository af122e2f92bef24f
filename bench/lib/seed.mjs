// Step 3: apply the D1 migrations and seed the data the bench reads.
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { unstable_splitSqlQuery } from "wrangler";
import { ROOT, SERVICE } from "./harness.mjs";

/** Applies migrations/*.sql in order, as `wrangler d1 migrations apply` would. */
export async function applyMigrations(db, migrationsDir) {
  const files = readdirSync(migrationsDir)
    .filter((f) => f.endsWith(".sql"))
    .sort();
  for (const file of files) {
    const queries = unstable_splitSqlQuery(readFileSync(path.join(migrationsDir, file), "utf8"));
    await db.batch(queries.map((q) => db.prepare(q)));
  }
  return files;
}

/** The service's D1 database in the Miniflare instance, with the migrations applied. */
export async function migratedDb(mf) {
  const db = await mf.getD1Database("DB", SERVICE);
  await applyMigrations(db, path.join(ROOT, "migrations"));
  return db;
}

export async function signup(serviceUrl, workspaceName) {
  const res = await fetch(new URL("/v1/api/signup", serviceUrl), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      workspace_name: workspaceName,
      email: `bench-${randomUUID()}@example.com`,
      password: "bench password 123",
      name: "Bench Admin",
    }),
  });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${await res.text()}`);
  const body = await res.json();
  if (!body.token?.startsWith("svc_pat_")) throw new Error("signup returned no PAT");
  return { token: body.token, workspaceId: body.workspace.id, userId: body.user.id };
}

/** Credits for every paid action of a bench run: one `adjustment` ledger row of a billion. */
export async function creditWorkspace(db, workspaceId) {
  await db
    .prepare(
      "INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at) VALUES (?, ?, 1000000000, 'adjustment', 'bench', ?)",
    )
    .bind(randomUUID(), workspaceId, new Date().toISOString())
    .run();
}

/**
 * Adds agents straight into D1 (the agents creation API is another area's work): a mix of
 * enabled and disabled, with instructions and JSON arrays, so the list is a realistic size.
 */
export async function addAgents(db, workspaceId, count) {
  const now = new Date().toISOString();
  const statements = [];
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const slug = `agent-${String(i).padStart(2, "0")}`;
    statements.push(
      db
        .prepare(
          `INSERT INTO agents (id, workspace_id, slug, display_name, description, instructions, instructions_is_default,
             tone, verbosity, aliases, cautions, languages, runtime_profile, delivery_mode, status, is_default, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 0, 'friendly', 'balanced', ?, ?, ?, 'standard', 'chat', ?, 0, ?, ?)`,
        )
        .bind(
          id,
          workspaceId,
          slug,
          `Agent ${i}`,
          `Handles topic ${i} for the team.`,
          `You help with topic ${i}. Answer briefly, cite the workspace documents you used, and escalate billing questions.`,
          JSON.stringify([`a${i}`, `helper-${i}`]),
          JSON.stringify(["Never share credentials."]),
          JSON.stringify(["en", "fr"]),
          i % 4 === 3 ? "disabled" : "enabled",
          now,
          now,
        ),
      db
        .prepare("INSERT INTO agent_handles (workspace_id, handle, agent_id) VALUES (?, ?, ?)")
        .bind(workspaceId, slug, id),
    );
  }
  await db.batch(statements);
}
