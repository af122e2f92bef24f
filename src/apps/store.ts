/** Where app bundles live and how they are addressed. */

/** File `n` of an app's manifest: the key carries ids only, never a path the model chose. */
export const appFileKey = (workspaceId: string, appId: string, n: number) => `apps/${workspaceId}/${appId}/${n}`;

export const appPrefix = (workspaceId: string, appId: string) => `apps/${workspaceId}/${appId}/`;

/** The origin app pages are served from: `APPS_ORIGIN`, else `BASE_URL`, else the request's. */
export function appsOrigin(env: Env, fallbackOrigin: string): string {
  return (env.APPS_ORIGIN || env.BASE_URL || fallbackOrigin).replace(/\/+$/, "");
}

export const appUrl = (origin: string, workspaceSlug: string, appSlug: string) =>
  `${origin}/v1/apps/${workspaceSlug}/${appSlug}/`;

/** `APP_QUOTA`, 5 when unset or not a non-negative integer. */
export function appQuota(env: Env): number {
  const n = Number(env.APP_QUOTA);
  return env.APP_QUOTA !== undefined && env.APP_QUOTA !== "" && Number.isInteger(n) && n >= 0 ? n : 5;
}

/** What a page is served with: scripts and forms run, but in an opaque origin (never `allow-same-origin`). */
export const APP_CSP = "sandbox allow-scripts allow-forms allow-popups";
