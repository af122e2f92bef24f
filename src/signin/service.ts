/** A same-origin path to go back to after sign-in, or the default. Never another origin. */
export function safeReturnTo(value: string | undefined | null): string {
  const fallback = "/v1/api/me";
  if (!value?.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return fallback;
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return fallback;
  return value;
}
