/** The guarded fetch's caps while the exchange lasts: one deadline for request and body, and the body's size. */
import { OutboundError, TimeoutError, TooLargeError } from "./outbound-errors";

/** A deadline shared by the request and the body: the time cap, or the caller's signal. */
export function deadline(url: string, timeoutMs: number, outer?: AbortSignal) {
  const controller = new AbortController();
  let reason: OutboundError | null = null;
  const fail = (e: OutboundError) => {
    if (reason) return;
    reason = e;
    controller.abort(e);
  };
  const timer = setTimeout(() => fail(new TimeoutError(url, timeoutMs)), timeoutMs);
  const onOuter = () => fail(new OutboundError("aborted", `The request to ${url} was cancelled`));
  if (outer?.aborted) onOuter();
  outer?.addEventListener("abort", onOuter);
  return {
    signal: controller.signal,
    error: () => reason,
    /** Rejects with the deadline's error as soon as it passes, whatever `p` does. */
    race<T>(p: Promise<T>): Promise<T> {
      if (reason) {
        p.catch(() => {}); // settles later, unobserved: nobody waits for it any more
        return Promise.reject(reason);
      }
      return new Promise<T>((resolve, reject) => {
        const onAbort = () => reject(reason);
        controller.signal.addEventListener("abort", onAbort, { once: true });
        p.then(resolve, reject).finally(() => controller.signal.removeEventListener("abort", onAbort));
      });
    },
    done() {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuter);
    },
  };
}

export type Deadline = ReturnType<typeof deadline>;

/** The body, passed through while it stays under the cap and the deadline. */
export function cappedBody(
  source: ReadableStream<Uint8Array> | null,
  url: string,
  maxBytes: number,
  time: Deadline,
  onError: (e: OutboundError) => void,
): ReadableStream<Uint8Array> {
  if (!source) {
    time.done();
    return new ReadableStream({ start: (c) => c.close() });
  }
  const reader = source.getReader();
  let total = 0;
  const stop = (controller: ReadableStreamDefaultController<Uint8Array>, e: OutboundError) => {
    time.done();
    onError(e);
    reader.cancel(e).catch(() => {});
    controller.error(e);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await time.race(reader.read());
      } catch (e) {
        const err = e instanceof OutboundError ? e : new OutboundError("unreachable", `Reading ${url} failed`);
        return stop(controller, err);
      }
      if (chunk.done) {
        time.done();
        controller.close();
        return;
      }
      total += chunk.value.byteLength;
      if (total > maxBytes) return stop(controller, new TooLargeError(url, maxBytes));
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      time.done();
      return reader.cancel(reason);
    },
  });
}

export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
