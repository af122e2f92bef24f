import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import { auditSigner } from "../src/audit-log/checkpoint";
import { parseSignerKey, signNote, verifierKey } from "../src/audit-log/signed-note";
import { ApiError } from "../src/platform/problem";
import vectors from "./fixtures/signed-note/vectors.json";
import { call, expectProblem } from "./support/api";
import { addUser, signupWorkspace } from "./support/seed";

const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** An independent signed-note reader: the text of `note` when a line carries a valid signature by `vkey`, else null. */
async function openNote(note: string, vkey: string): Promise<string | null> {
  const [name, id, ...rest] = vkey.split("+");
  const key = unb64(rest.join("+"));
  if (key[0] !== 1 || key.length !== 33) return null;
  const pub = key.subarray(1);
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new Uint8Array([...new TextEncoder().encode(name!), 0x0a, 1, ...pub])),
  );
  if (hex(digest.subarray(0, 4)) !== id) return null;
  const split = note.lastIndexOf("\n\n");
  const text = note.slice(0, split + 1);
  const verifying = await crypto.subtle.importKey("raw", pub, "Ed25519", false, ["verify"]);
  for (const line of note.slice(split + 2).split("\n")) {
    const m = /^— (\S+) (\S+)$/u.exec(line);
    if (!m || m[1] !== name) continue;
    const sig = unb64(m[2]!);
    if (hex(sig.subarray(0, 4)) !== id) continue;
    if (await crypto.subtle.verify("Ed25519", verifying, sig.subarray(4), new TextEncoder().encode(text))) return text;
  }
  return null;
}

describe("signed notes (C2SP signed-note)", () => {
  it("signs the Go sumdb/note example byte for byte and derives its verifier key", async () => {
    const v = vectors.go_sumdb_note_example;
    const signer = await parseSignerKey(v.signer_key);
    expect(verifierKey(signer)).toBe(v.verifier_key);
    expect(await signNote(signer, v.text)).toBe(v.note);
    expect(await openNote(v.note, v.verifier_key)).toBe(v.text);
  });

  it("the in-test reader accepts the C2SP spec's example and refuses a tampered note", async () => {
    const v = vectors.c2sp_example;
    expect(await openNote(v.note, v.verifier_key)).toBe("This is an example message.\n");
    expect(await openNote(v.note.replace("example message", "exemple message"), v.verifier_key)).toBeNull();
  });

  it("refuses a signer key whose id does not match", async () => {
    await expect(
      parseSignerKey(vectors.go_sumdb_note_example.signer_key.replace("c74f20a3", "c74f20a4")),
    ).rejects.toThrow();
  });
});

describe("checkpoints", () => {
  it("GET /v1/audit/log-key answers the verifier key as text, without a credential", async () => {
    const res = await call("GET", "/v1/audit/log-key");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/plain; charset=utf-8$/i);
    // "<name>+<8 hex key id>+<base64(0x01 ‖ Ed25519 public key)>"
    expect(await res.text()).toMatch(/^svc\.test\/audit\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}\n$/);
  });

  it("GET /v1/admin/audit/checkpoint is the tree's size and root, signed as a note the log key verifies", async () => {
    const ws = await signupWorkspace();
    const res = await call("GET", "/v1/admin/audit/checkpoint", { token: ws.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/plain; charset=utf-8$/i);
    const note = await res.text();
    const vkey = (await (await call("GET", "/v1/audit/log-key")).text()).trim();
    const body = await openNote(note, vkey);
    const head = await auditLog(env, ws.workspace.id).treeHead();
    expect(head.size).toBeGreaterThan(0);
    // body "<origin>\n<size>\n<base64 root hash>\n", origin "<BASE_URL host>/audit/<workspace id>"
    expect(body).toBe(`svc.test/audit/${ws.workspace.id}\n${head.size}\n${head.root}\n`);
  });

  it("is for admins only", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    await expectProblem(
      await call("GET", "/v1/admin/audit/checkpoint", { token: member.token }),
      403,
      "admin_required",
    );
    await expectProblem(await call("GET", "/v1/admin/audit/checkpoint"), 401);
  });

  it("signs with AUDIT_SIGNING_KEY when set, and refuses to sign on a public origin without one", async () => {
    const v = vectors.go_sumdb_note_example;
    const configured = { ...env, BASE_URL: "https://audit.example", AUDIT_SIGNING_KEY: v.signer_key } as Env;
    expect(verifierKey(await auditSigner(configured, "https://audit.example/"))).toBe(v.verifier_key);
    const unset = { ...env, BASE_URL: "https://audit.example" } as Env;
    const refused = await auditSigner(unset, "https://audit.example/").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 503, code: "audit_signing_not_configured" });
    const broken = { ...configured, AUDIT_SIGNING_KEY: "PRIVATE+KEY+x+00000000+AAAA" } as Env;
    await expect(auditSigner(broken, "https://audit.example/")).rejects.toMatchObject({ status: 503 });
  });
});
