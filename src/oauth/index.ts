import type { Area } from "../http/area";
import { OAUTH_ACCESS_TOKEN } from "./access-token";

/** The OAuth 2.1 authorization server; its access tokens are accepted on the API. */
export const oauthArea: Area = {
  name: "oauth",
  routes: {
    paths: ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource", "/v1/oauth"],
    load: async () => (await import("./routes")).oauthRouter,
  },
  bearerKind: OAUTH_ACCESS_TOKEN,
  // Revokes the user's grants (and so every token) and forgets their consents.
  eraseStep: async (env, workspaceId, userId) =>
    (await import("./revocation")).eraseOAuthUser(env, workspaceId, userId),
};
