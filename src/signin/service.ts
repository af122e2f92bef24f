/** The signed-in page, where sign-in leads when it was not asked to go elsewhere. */
export const ACCOUNT_PAGE = "/v1/account";

/** A same-origin path to go back to after sign-in, or the account page. Never another origin. */
export function safeReturnTo(value: string | undefined | null): string {
  const fallback = ACCOUNT_PAGE;
  if (!value?.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return fallback;
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return fallback;
  return value;
}
