/**
 * `AUDIT_WITNESSES`: the witnesses that cosign every workspace's checkpoints. Entries are
 * separated by commas or newlines; each is `<verifier key> <URL>`, the witness's C2SP
 * tlog-cosignature key (`<name>+<8 hex key id>+<base64(0x04 ‖ Ed25519 key)>`) and the URL its
 * `add-checkpoint` endpoint is under.
 */
import { logError } from "../platform/log";
import { ApiError } from "../platform/problem";
import { parseWitness, type Witness } from "./witness";

export type ConfiguredWitness = Witness & { verifierKey: string };

// Parsed once per configuration text and isolate.
const parsed = new Map<string, Promise<ConfiguredWitness[]>>();

class WitnessesMisconfigured extends ApiError {
  constructor(detail: string) {
    super(503, "audit_witnesses_misconfigured", detail);
  }
}

async function parseEntry(entry: string): Promise<ConfiguredWitness> {
  const parts = entry.split(/\s+/u);
  if (parts.length !== 2) throw new Error(`"${entry}" is not "<verifier key> <URL>"`);
  const [verifierKey, url] = parts as [string, string];
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`"${url}" is not a URL`);
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") throw new Error(`"${url}" is not an http(s) URL`);
  try {
    return { ...(await parseWitness(url, verifierKey)), verifierKey };
  } catch (e) {
    throw new Error(`"${verifierKey}": ${(e as Error).message}`);
  }
}

/**
 * The configured witnesses (none when unset). A malformed entry is logged once and refused
 * with a 503 problem naming it, never read as "no witnesses".
 */
export function configuredWitnesses(env: Env): Promise<ConfiguredWitness[]> {
  const text = env.AUDIT_WITNESSES?.trim() ?? "";
  if (!text) return Promise.resolve([]);
  let witnesses = parsed.get(text);
  if (!witnesses) {
    witnesses = Promise.all(
      text
        .split(/[,\n]/u)
        .map((e) => e.trim())
        .filter(Boolean)
        .map(parseEntry),
    ).then((list) => {
      const keys = new Set(list.map((w) => w.verifierKey));
      if (keys.size !== list.length) throw new Error("a witness is listed twice");
      return list;
    });
    witnesses.catch((e: unknown) => logError("AUDIT_WITNESSES is invalid", e));
    parsed.set(text, witnesses);
  }
  return witnesses.catch((e: unknown) => {
    throw new WitnessesMisconfigured(`AUDIT_WITNESSES is invalid: ${(e as Error).message}`);
  });
}
