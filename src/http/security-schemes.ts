/** The document's security schemes, as the routes' requirements and the CORS check name them. */
export const BEARER = "bearer";
/** The browser's sign-in session cookie, accepted only where a route says `session: true`. */
export const SESSION = "session";

/** How the document names the `admin-role` requirement: a role, not a scope (OpenAPI 3.1 allows role names). */
export const ADMIN_ROLE = "role:admin";
