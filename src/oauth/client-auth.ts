import { hashToken, timingSafeEqual } from "../platform/crypto";
import { resolveClient, UnusableClientDocument } from "./client-documents";
import type { ClientRow } from "./clients";
import { invalidClient, invalidRequest } from "./errors";
import { basicCredentials } from "./params";
import type { AuthMethod } from "./schemas";

/** The client credentials a request presents, and by which method. */
export type Presented = {
  clientId: string | undefined;
  method: AuthMethod;
  secret: string | undefined;
  usedBasic: boolean;
};

export function presentedCredentials(authorization: string | undefined, params: Map<string, string>): Presented {
  const basic = basicCredentials(authorization);
  const bodyId = params.get("client_id");
  const bodySecret = params.get("client_secret");
  if (basic && bodySecret !== undefined)
    throw invalidRequest("Use one client authentication method, not Basic and client_secret together");
  if (basic && bodyId !== undefined && bodyId !== basic.id)
    throw invalidRequest("client_id does not match the Basic credentials");
  return {
    clientId: basic?.id ?? bodyId,
    method: basic ? "client_secret_basic" : bodySecret !== undefined ? "client_secret_post" : "none",
    secret: basic?.secret ?? bodySecret,
    usedBasic: !!basic,
  };
}

/** Throws `invalid_client` unless the client used its registered method and, if confidential, its secret. */
export function verifyClient(client: ClientRow, p: Presented): ClientRow {
  if (client.authMethod !== p.method) {
    throw invalidClient(`This client authenticates with ${client.authMethod}, not ${p.method}`, p.usedBasic);
  }
  if (
    p.method !== "none" &&
    !(p.secret !== undefined && client.secretHash && timingSafeEqual(hashToken(p.secret), client.secretHash))
  ) {
    throw invalidClient("The client secret is wrong", p.usedBasic);
  }
  return client;
}

/**
 * Authenticates the client of a token or introspection request by the method it registered,
 * and only that one: HTTP Basic, `client_secret` in the body, or (public clients) `client_id`
 * alone. Unknown or deleted clients, a method other than the registered one and a wrong
 * secret are all `invalid_client` (401), and so is a client identified by a metadata
 * document that cannot be fetched or used.
 */
export async function authenticateClient(
  env: Env,
  authorization: string | undefined,
  params: Map<string, string>,
  origin?: string,
): Promise<ClientRow> {
  const presented = presentedCredentials(authorization, params);
  if (!presented.clientId) throw invalidClient("client_id is required", presented.usedBasic);
  let client: ClientRow | undefined;
  try {
    // A document client must have been through the authorization endpoint first.
    client = await resolveClient(env, presented.clientId, { origin, fetchNew: false });
  } catch (e) {
    if (e instanceof UnusableClientDocument) throw invalidClient(e.message, presented.usedBasic);
    throw e;
  }
  if (!client) throw invalidClient("Unknown or deleted client", presented.usedBasic);
  return verifyClient(client, presented);
}

/**
 * The client of a revocation request, which is answered 200 whatever it names: a request
 * naming no client or one that is unknown, deleted or unusable gets null (nothing is revoked).
 * A known client must still authenticate as `authenticateClient` demands (a wrong secret is 401).
 */
export async function revocationClient(
  env: Env,
  authorization: string | undefined,
  params: Map<string, string>,
  origin?: string,
): Promise<ClientRow | null> {
  const presented = presentedCredentials(authorization, params);
  if (!presented.clientId) return null;
  const client = await resolveClient(env, presented.clientId, { origin, fetchNew: false }).catch((e: unknown) => {
    if (e instanceof UnusableClientDocument) return undefined;
    throw e;
  });
  return client ? verifyClient(client, presented) : null;
}
