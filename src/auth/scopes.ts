import { type SQL, sql } from "drizzle-orm";

/** The scope vocabulary: every scope a token may carry, and the role ceilings that cap every token. */
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

/** Token scopes ∩ role ceiling: computed per request so a demoted user loses power at once. */
export function effectiveScopes(tokenScopes: readonly string[], role: Role): Set<Scope> {
  const ceiling = roleCeiling(role);
  return new Set(tokenScopes.filter((s): s is Scope => isScope(s) && ceiling.has(s)));
}

/**
 * `effectiveScopes` in SQL, for a row a batch writes before the code sees the credential (the
 * token endpoint's events): the scopes of a JSON array within the role's ceiling, in their
 * order, space-separated (NULL when none). The ceilings are `roleCeiling`'s own sets.
 */
export function effectiveScopesSql(scopesJson: SQL, role: SQL): SQL {
  const within = (r: Role) => sql.raw(`j.value IN (${[...roleCeiling(r)].map((s) => `'${s}'`).join(", ")})`);
  return sql`(SELECT group_concat(j.value, ' ') FROM json_each(${scopesJson}) j
    WHERE CASE WHEN ${role} = 'admin' THEN ${within("admin")} ELSE ${within("member")} END)`;
}

/**
 * The scopes a credential may carry: every scope but `svc:computer`. That capability is never
 * on a token (PAT or OAuth) or in any metadata; the local-browser ask route widens one turn
 * with it, and nothing else grants it.
 */
export const GRANTABLE_SCOPES: readonly Scope[] = SCOPES.filter((s) => s !== "svc:computer");
const GRANTABLE_SET: ReadonlySet<string> = new Set(GRANTABLE_SCOPES);
export const isGrantable = (s: string): s is Scope => GRANTABLE_SET.has(s);

/**
 * What an OAuth grant gives a user now: the grantable scopes within the user's current role
 * (so `admin` only while the user is an admin). Used when a code or refresh token is
 * exchanged, so the token response never claims more than the token can do.
 */
export const grantableFor = (scopes: readonly string[], role: Role): Scope[] => [...effectiveScopes(scopes, role)];

/**
 * A member may hold every grantable scope but `admin`; an admin every grantable scope. No
 * credential holds `svc:computer`, so no token, session or grant can ever reach it.
 */
export function roleCeiling(role: Role): ReadonlySet<Scope> {
  return role === "admin" ? ADMIN_CEILING : MEMBER_CEILING;
}
const ADMIN_CEILING: ReadonlySet<Scope> = new Set(GRANTABLE_SCOPES);
const MEMBER_CEILING: ReadonlySet<Scope> = new Set(GRANTABLE_SCOPES.filter((s) => s !== "admin"));

/** What signup's first admin token and a browser session may do: every grantable scope. */
export const DEFAULT_GRANT: readonly Scope[] = GRANTABLE_SCOPES;
