import { z } from "zod";

/** Who opens a live socket, as the Worker tells the room once it has checked the caller. */
export const liveViewerSchema = z.object({ conversationId: z.string(), workspaceId: z.string(), userId: z.string() });
export type LiveViewer = z.infer<typeof liveViewerSchema>;
