/** What a receiving page asks of the video a forwarding unit sends it (adaptive stream). */
export interface VideoWants {
  /** The size it shows the video at (CSS px times device pixel ratio): no larger layer is sent. */
  maxWidth?: number | undefined;
  maxHeight?: number | undefined;
  /** No video while the element is hidden or off screen (audio goes on). */
  paused?: boolean | undefined;
}
