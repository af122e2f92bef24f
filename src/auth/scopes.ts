/** The scope vocabulary (decisions.md) and the role ceilings that cap every token. */
export const SCOPES = [
  "admin",
  "agents:read",
  "agents:write",
  "conversations:read",
  "conversations:write",
  "documents:read",
  "documents:write",
  "billing:read",
  "profile:read",
  "email:read",
  "memory:read",
  "memory:write",
  "svc:computer",
] as const;
export type Scope = (typeof SCOPES)[number];
export const ROLES = ["admin", "member"] as const;
export type Role = (typeof ROLES)[number];

const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);
export const isScope = (s: string): s is Scope => SCOPE_SET.has(s);

/** A member may hold every scope but `admin`; an admin may hold every scope. */
export function roleCeiling(role: Role): ReadonlySet<Scope> {
  return role === "admin" ? ADMIN_CEILING : MEMBER_CEILING;
}
const ADMIN_CEILING: ReadonlySet<Scope> = new Set(SCOPES);
const MEMBER_CEILING: ReadonlySet<Scope> = new Set(SCOPES.filter((s) => s !== "admin"));

/** Token scopes ∩ role ceiling: computed per request so a demoted user loses power at once. */
export function effectiveScopes(tokenScopes: readonly string[], role: Role): Set<Scope> {
  const ceiling = roleCeiling(role);
  return new Set(tokenScopes.filter((s): s is Scope => isScope(s) && ceiling.has(s)));
}

/** What signup's first admin token and a browser session may do: everything but `svc:computer`. */
export const DEFAULT_GRANT: readonly Scope[] = SCOPES.filter((s) => s !== "svc:computer");
