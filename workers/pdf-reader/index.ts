/**
 * The PDF reader: PDF.js (through unpdf, its build for serverless runtimes) in a Worker of its
 * own, called over RPC by the service's `PDF_READER` binding. PDF.js is 1.6 MB of the code a
 * Worker parses when it starts; here only the rare request that reads a PDF pays for it, and
 * the service's cold starts stay small.
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { extractText, getDocumentProxy } from "unpdf";

/** The text of every page, or why there is none (a value, not an exception: nothing to log). */
export type PdfText = { text: string; pages: number } | { error: string };

export default class PdfReader extends WorkerEntrypoint {
  /** The text of a PDF, page by page. */
  async text(bytes: Uint8Array): Promise<PdfText> {
    let doc: Awaited<ReturnType<typeof getDocumentProxy>>;
    try {
      doc = await getDocumentProxy(bytes);
    } catch {
      return { error: "The file is not a readable PDF" };
    }
    try {
      const { text, totalPages } = await extractText(doc, { mergePages: false });
      return { text: text.map((t, i) => `--- Page ${i + 1} ---\n${t.trim()}`).join("\n\n"), pages: totalPages };
    } finally {
      await doc.destroy();
    }
  }

  override fetch(): Response {
    return new Response("The PDF reader answers RPC calls of the service only", { status: 404 });
  }
}
