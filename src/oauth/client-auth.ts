import { hashToken, timingSafeEqual } from "../platform/crypto";
import { resolveClient, UnusableClientDocument } from "./client-documents";
import type { ClientRow } from "./clients";
import { invalidClient, invalidRequest } from "./errors";
import { basicCredentials } from "./params";
import type { AuthMethod } from "./schemas";

/**
 * Authenticates the client of a token, introspection or revocation request by the method
 * it registered, and only that one: HTTP Basic, `client_secret` in the body, or (public
 * clients) `client_id` alone. Unknown or deleted clients, a method other than the
 * registered one and a wrong secret are all `invalid_client` (401), and so is a client
 * identified by a metadata document that cannot be fetched or used.
 */
export async function authenticateClient(
  env: Env,
  authorization: string | undefined,
  params: Map<string, string>,
  origin?: string,
): Promise<ClientRow> {
  const basic = basicCredentials(authorization);
  const bodyId = params.get("client_id");
  const bodySecret = params.get("client_secret");
  if (basic && bodySecret !== undefined)
    throw invalidRequest("Use one client authentication method, not Basic and client_secret together");
  if (basic && bodyId !== undefined && bodyId !== basic.id)
    throw invalidRequest("client_id does not match the Basic credentials");

  const usedBasic = !!basic;
  const clientId = basic?.id ?? bodyId;
  if (!clientId) throw invalidClient("client_id is required", usedBasic);
  const method: AuthMethod = basic ? "client_secret_basic" : bodySecret !== undefined ? "client_secret_post" : "none";
  const secret = basic?.secret ?? bodySecret;

  let client: ClientRow | undefined;
  try {
    // A document client must have been through the authorization endpoint first.
    client = await resolveClient(env, clientId, { origin, fetchNew: false });
  } catch (e) {
    if (e instanceof UnusableClientDocument) throw invalidClient(e.message, usedBasic);
    throw e;
  }
  if (!client) throw invalidClient("Unknown or deleted client", usedBasic);
  if (client.authMethod !== method) {
    throw invalidClient(`This client authenticates with ${client.authMethod}, not ${method}`, usedBasic);
  }
  if (
    method !== "none" &&
    !(secret !== undefined && client.secretHash && timingSafeEqual(hashToken(secret), client.secretHash))
  ) {
    throw invalidClient("The client secret is wrong", usedBasic);
  }
  return client;
}
