import { env } from "cloudflare:workers";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import { deliverNow } from "../src/audit/delivery";
import { AuditEventWithLeafSchema, ConsistencyProofSchema, InclusionProofSchema } from "../src/audit-log/schemas";
import { call, expectProblem, parse } from "./support/api";
import { unb64, verifyConsistency, verifyInclusion } from "./support/rfc9162";
import { addUser, signupWorkspace } from "./support/seed";

const leafHash = (leaf: Uint8Array) =>
  new Uint8Array(
    createHash("sha256")
      .update(new Uint8Array([0]))
      .update(leaf)
      .digest(),
  );

/** The workspace's events (its outbox delivered first) plus n more. */
async function grow(workspaceId: string, n: number) {
  await deliverNow(env, workspaceId);
  await auditLog(env, workspaceId).append(
    Array.from({ length: n }, (_, i) => ({
      kind: "test.event",
      outcome: "success" as const,
      actorKind: "system" as const,
      actorId: null,
      agentId: null,
      conversationId: null,
      target: `thing:${i}`,
      intent: "poke",
      subjectUserId: null,
      details: { i },
    })),
  );
}

describe("audit proofs over the API", () => {
  it("serves each event's leaf bytes (SHA-256 of them is the chain hash) and inclusion proofs that verify against the root", async () => {
    const ws = await signupWorkspace();
    await grow(ws.workspace.id, 12);
    const { size, root } = await auditLog(env, ws.workspace.id).treeHead();
    for (let seq = 1; seq <= size; seq++) {
      const event = await parse(
        await call("GET", `/v1/admin/audit/events/${seq}`, { token: ws.adminToken }),
        AuditEventWithLeafSchema,
      );
      const leaf = unb64(event.leaf);
      // "The leaf bytes are the event's canonical encoding that the chain hashes"
      expect(createHash("sha256").update(leaf).digest("hex")).toBe(event.hash);
      const proof = await parse(
        await call("GET", `/v1/admin/audit/proofs/inclusion?seq=${seq}&size=${size}`, { token: ws.adminToken }),
        InclusionProofSchema,
      );
      expect(proof).toMatchObject({ leaf_index: seq - 1, tree_size: size });
      expect(verifyInclusion(seq - 1, size, leafHash(leaf), proof.hashes.map(unb64), unb64(root))).toBe(true);
    }
  });

  it("serves consistency proofs between an older and a newer tree", async () => {
    const ws = await signupWorkspace();
    const log = auditLog(env, ws.workspace.id);
    await grow(ws.workspace.id, 3);
    const older = await log.treeHead();
    await grow(ws.workspace.id, 9);
    const newer = await log.treeHead();
    const proof = await parse(
      await call("GET", `/v1/admin/audit/proofs/consistency?from=${older.size}&to=${newer.size}`, {
        token: ws.adminToken,
      }),
      ConsistencyProofSchema,
    );
    expect(proof).toMatchObject({ from: older.size, to: newer.size });
    expect(
      verifyConsistency(older.size, newer.size, unb64(older.root), unb64(newer.root), proof.hashes.map(unb64)),
    ).toBe(true);
  });

  it("answers 400 for a size beyond the tree and for from > to, 404 for no such event", async () => {
    const ws = await signupWorkspace();
    await grow(ws.workspace.id, 2);
    const { size } = await auditLog(env, ws.workspace.id).treeHead();
    const get = (path: string) => call("GET", path, { token: ws.adminToken });
    // "A size beyond the tree → 400; `from > to` → 400."
    await expectProblem(
      await get(`/v1/admin/audit/proofs/inclusion?seq=1&size=${size + 1}`),
      400,
      "proof_out_of_range",
    );
    await expectProblem(await get(`/v1/admin/audit/proofs/inclusion?seq=${size}&size=1`), 400, "proof_out_of_range");
    await expectProblem(
      await get(`/v1/admin/audit/proofs/consistency?from=1&to=${size + 1}`),
      400,
      "proof_out_of_range",
    );
    await expectProblem(await get(`/v1/admin/audit/proofs/consistency?from=${size}&to=1`), 400, "proof_out_of_range");
    await expectProblem(await get("/v1/admin/audit/proofs/inclusion?seq=0&size=1"), 400);
    await expectProblem(await get("/v1/admin/audit/proofs/inclusion?seq=x&size=1"), 400);
    await expectProblem(await get("/v1/admin/audit/proofs/consistency?from=1"), 400);
    await expectProblem(await get(`/v1/admin/audit/events/${size + 1}`), 404);
    await expectProblem(await get("/v1/admin/audit/events/abc"), 400);
  });

  it("is for admins only", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    for (const path of [
      "/v1/admin/audit/events/1",
      "/v1/admin/audit/proofs/inclusion?seq=1&size=1",
      "/v1/admin/audit/proofs/consistency?from=1&to=1",
    ])
      await expectProblem(await call("GET", path, { token: member.token }), 403, "admin_required");
  });
});
