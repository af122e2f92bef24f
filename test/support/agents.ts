import { env } from "cloudflare:workers";
import { type AgentRow, AgentRowSchema } from "../../src/agents/schemas";
import { call, parse } from "./api";

/** Creates an agent through the API and returns it; anything but 200 fails the test. */
export async function createAgent(token: string, body: Record<string, unknown>): Promise<AgentRow> {
  const res = await call("POST", "/v1/agents", { token, body });
  if (res.status !== 200) throw new Error(`create agent failed: ${res.status} ${await res.text()}`);
  return parse(res, AgentRowSchema);
}

/** Makes the workspace's default agent wait for a person's approval before it runs `tools`; answers its id. */
export async function requireApprovalOf(token: string, tools: string[]): Promise<string> {
  const { agents } = (await (await call("GET", "/v1/agents", { token })).json()) as {
    agents: { id: string; is_default: boolean }[];
  };
  const agent = agents.find((a) => a.is_default)!;
  const res = await call("PATCH", `/v1/agents/${agent.id}`, { token, body: { approval_required: tools } });
  if (res.status !== 200) throw new Error(`setting approval_required failed: ${res.status} ${await res.text()}`);
  return agent.id;
}

export async function getAgent(token: string, id: string): Promise<AgentRow> {
  const res = await call("GET", `/v1/agents/${id}`, { token });
  if (res.status !== 200) throw new Error(`get agent failed: ${res.status} ${await res.text()}`);
  return parse(res, AgentRowSchema);
}

/** The handles the database holds for an agent, sorted. */
export async function handlesOf(agentId: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT handle FROM agent_handles WHERE agent_id = ? ORDER BY handle")
    .bind(agentId)
    .all<{ handle: string }>();
  return results.map((r) => r.handle);
}

export function b64(bytes: ArrayLike<number>): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
  return btoa(bin);
}

export function fromB64(s: string): Uint8Array {
  const bin = atob(s);
  return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Small but real images of each accepted type. */
export const IMAGES = {
  png: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  gif: "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7",
  webp: "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==",
  jpeg: b64([
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xff, 0xd9,
  ]),
} as const;
