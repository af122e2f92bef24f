import { z } from "zod";

/** The identity on the Worker's upgrade request, set once it has authenticated the PAT. */
export const connectionMetaSchema = z.object({
  userId: z.string().min(1),
  workspaceId: z.string().min(1),
  tokenId: z.string().min(1),
  /** Chosen by the Worker so its connect audit event and the object's disconnect event share a target. */
  connectionId: z.string().min(1),
});
export type ConnectionMeta = z.infer<typeof connectionMetaSchema>;

/** A refused frame's or result's issues, as the extension is told them. */
export const issuesText = (error: z.ZodError) => z.prettifyError(error);
