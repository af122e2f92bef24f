/**
 * The audit log's checkpoints: C2SP tlog-checkpoint bodies signed as C2SP signed notes with the
 * service's Ed25519 key (`AUDIT_SIGNING_KEY`, a `PRIVATE+KEY+…` signer key).
 */
import { baseUrl } from "../platform/env";
import { logWarning } from "../platform/log";
import { ApiError } from "../platform/problem";
import { isLocal } from "../platform/secret-box";
import { type NoteSigner, parseSignerKey, signerFromSeed, signNote } from "./signed-note";

const DEV_SEED_TEXT = "workspace-agent-service local development audit signing key (never use in production)";

// Imported signers, per configured key (or development key name): safe to lose.
const signers = new Map<string, Promise<NoteSigner>>();
let warned = false;

class SigningUnavailable extends ApiError {
  constructor(detail: string) {
    super(503, "audit_signing_not_configured", detail);
  }
}

const hostOf = (env: Env, requestUrl: string) => new URL(baseUrl(env, requestUrl)).host;

/** `<BASE_URL host>/audit/<workspace id>`: the checkpoint's origin line. */
export const logOrigin = (env: Env, requestUrl: string, workspaceId: string) =>
  `${hostOf(env, requestUrl)}/audit/${workspaceId}`;

/**
 * The service's signer. Without `AUDIT_SIGNING_KEY` a local deployment signs with a development
 * key derived from a fixed text, named `<host>/audit` (with a warning); a public one answers 503.
 */
export async function auditSigner(env: Env, requestUrl: string): Promise<NoteSigner> {
  const configured = env.AUDIT_SIGNING_KEY?.trim();
  if (configured) {
    let signer = signers.get(configured);
    if (!signer) {
      signer = parseSignerKey(configured);
      signers.set(configured, signer);
    }
    return signer.catch((e: unknown) => {
      signers.delete(configured);
      throw new SigningUnavailable(`AUDIT_SIGNING_KEY is not a valid Ed25519 signer key: ${(e as Error).message}`);
    });
  }
  if (!isLocal(env)) throw new SigningUnavailable("AUDIT_SIGNING_KEY is not configured; checkpoints cannot be signed");
  if (!warned) {
    warned = true;
    logWarning(
      "AUDIT_SIGNING_KEY unset: signing audit checkpoints with the local development key (never in production)",
    );
  }
  const name = `${hostOf(env, requestUrl)}/audit`;
  let signer = signers.get(`dev:${name}`);
  if (!signer) {
    signer = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(DEV_SEED_TEXT))
      .then((seed) => signerFromSeed(name, new Uint8Array(seed)));
    signers.set(`dev:${name}`, signer);
  }
  return signer;
}

/** The tlog-checkpoint body: origin, tree size, base64 root hash, one a line. */
export const checkpointBody = (origin: string, size: number, root: string) => `${origin}\n${size}\n${root}\n`;

export async function signedCheckpoint(signer: NoteSigner, origin: string, size: number, root: string) {
  return signNote(signer, checkpointBody(origin, size, root));
}
