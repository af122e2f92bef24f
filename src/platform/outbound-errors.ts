/** What the guarded fetch throws: a refused URL, or a request or body past its caps. */

export type OutboundErrorCode =
  | "blocked_url"
  | "too_many_redirects"
  | "too_large"
  | "timeout"
  | "aborted"
  | "unreachable";

/** Every refusal or failure of the guarded fetch; `code` says which. */
export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "OutboundError";
  }
}
/** The URL (or a redirect target) breaks the outbound rules; nothing was sent to it. */
export class BlockedUrlError extends OutboundError {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super("blocked_url", `Refused to fetch ${url}: ${reason}`);
  }
}
export class TooManyRedirectsError extends OutboundError {
  constructor(url: string, maxRedirects: number) {
    super("too_many_redirects", `${url} redirected more than ${maxRedirects} times`);
  }
}
export class TooLargeError extends OutboundError {
  constructor(
    url: string,
    readonly maxBytes: number,
  ) {
    super("too_large", `The response from ${url} is larger than ${maxBytes} bytes`);
  }
}
export class TimeoutError extends OutboundError {
  constructor(
    url: string,
    readonly timeoutMs: number,
  ) {
    super("timeout", `${url} did not answer within ${timeoutMs} ms`);
  }
}
