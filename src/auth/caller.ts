import type { Role, Scope } from "./scopes";

/** Who is calling, resolved once per request from the credential. */
export type Caller = {
  /** Which credential authenticated the request. */
  auth: "pat" | "oauth" | "session";
  /** Id of the token or session row. */
  credentialId: string;
  userId: string;
  email: string | null;
  name: string | null;
  role: Role;
  workspace: { id: string; name: string; slug: string };
  /** Effective scopes: the credential's scopes ∩ the role's ceiling. */
  scopes: ReadonlySet<Scope>;
  /** For OAuth access tokens, the client the token was issued to. */
  clientId?: string;
  /** For OAuth access tokens bound to one resource (RFC 8707), that resource; see auth/resources.ts. */
  resource?: string | null;
};

export const isAdmin = (c: Caller): boolean => c.role === "admin" && c.scopes.has("admin");
