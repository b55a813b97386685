// The transcript follows the conversation: a session shown (opened, switched, reloaded) lands
// on its newest message, a message sent is shown, and while the user is at the bottom what
// arrives stays in view. Scrolled up, the view stays where the user put it, and "Jump to latest"
// brings them back (it says when an approval waits).
//
// Whether to follow is the user's choice, not a measure taken after each change: messages out of
// view are not laid out (`content-visibility: auto`), so the height grows as the browser renders
// the ones that come into view, and "near the bottom" measured after a batch says no even though
// the user never moved. The view stops following only when the user scrolls up (the position goes
// above where it was put), and follows again when they reach the bottom; a ResizeObserver keeps
// it at the bottom while the rendered messages take their real height.
//
// A view drawn anew (a reset: the extension's answer replacing the view kept across a reload, a
// session picked) is first laid out with the new messages' placeholder heights (60 px each: they
// were never rendered), which puts "the bottom" far too high, then rendered at their real heights —
// often exactly the height of the view it replaced, which a ResizeObserver does not report (it
// reports a size that differs from the last one it reported). So a redraw observes the transcript
// anew: its size is reported at the next rendering whatever it is, and the view settles then (on
// the newest message, or where the user had scrolled up to).
import type { ScrollAnchor } from '../messages';
import { el } from './dom';

/** How close to the bottom counts as at the bottom (px). */
const AT_BOTTOM = 40;

export class Follow {
  private following = true;
  /** Where the view was last put (scrollTop): a position above it is the user's scroll. */
  private placed = 0;
  private attention = false;
  /** A place to put the view back at on the next settle (the same session drawn again). */
  private keep: ScrollAnchor | null = null;
  readonly button: HTMLButtonElement;
  private readonly observer = new ResizeObserver(() => this.settle());
  /** Where the view was last said to be (what `report` was last told). */
  private reported: string = 'null';
  private reportTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly scroller: HTMLElement,
    private readonly content: HTMLElement,
    /** Where the user scrolled up to (null: following the newest message), told when it settles: kept with the view. */
    private readonly report: (at: ScrollAnchor | null) => void = () => undefined,
  ) {
    this.button = el('button', 'jump-latest', '↓ Jump to latest');
    this.button.type = 'button';
    this.button.id = 'jump-latest';
    this.button.hidden = true;
    this.button.title = 'Scroll to the newest message and follow it';
    this.button.addEventListener('click', () => this.follow());
    scroller.appendChild(this.button);
    this.observer.observe(content);
    scroller.addEventListener('scroll', () => this.scrolled(), { passive: true });
  }

  get isFollowing(): boolean {
    return this.following;
  }

  /** Follow the newest message from now on (a session shown, a message sent, the button). */
  follow(): void {
    this.following = true;
    this.keep = null;
    this.attention = false;
    this.settle();
    this.update();
  }

  /**
   * The session shown is drawn again (a reload's saved view replaced by the extension's answer,
   * a restart's resume; or the view kept across a reload, drawn at load) while the user had
   * scrolled up to `at`: they stay there, not taken to the newest message under their eyes.
   * Applied when the new drawing settles.
   */
  stayAt(at: ScrollAnchor): void {
    this.following = false;
    this.keep = at;
    this.update();
  }

  /**
   * The transcript is drawn anew (a reset): it settles again once rendered at its real height, even
   * when that height is the one of the view it replaced.
   */
  redrawn(): void {
    this.observer.unobserve(this.content);
    this.observer.observe(this.content);
    this.reported = 'null'; // what is kept of the view was reset with it: where the view is is told again
    this.tell();
  }

  /** Where the user scrolled up to: the message at the top of the view and how far into it; null while following. */
  get scrolledTo(): ScrollAnchor | null {
    if (this.following) return null;
    if (this.keep !== null) return this.keep; // not drawn there yet
    const messages = this.messages();
    const top = this.scroller.scrollTop;
    // The first message whose bottom is below the top of the view (binary search: they are in order).
    let low = 0;
    let high = messages.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const node = messages[mid];
      if (node !== undefined && this.topOf(node) + node.offsetHeight > top) {
        found = mid;
        high = mid - 1;
      } else {
        low = mid + 1;
      }
    }
    const node = messages[found];
    if (node === undefined) return null;
    return { index: found, offset: Math.round(top - this.topOf(node)) }; // negative: the top of the view is in the gap above it
  }

  private messages(): HTMLElement[] {
    return Array.from(this.content.children).filter((node): node is HTMLElement => node instanceof HTMLElement && node.classList.contains('msg'));
  }

  /** Where a message begins, in the scroller's content (px). */
  private topOf(node: HTMLElement): number {
    return node.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top + this.scroller.scrollTop;
  }

  /** The scroll position of an anchor (the last message when there are fewer now). */
  private positionOf(at: ScrollAnchor): number {
    const messages = this.messages();
    const node = messages[Math.min(at.index, messages.length - 1)];
    return node === undefined ? 0 : this.topOf(node) + at.offset;
  }

  /**
   * Something new arrived, or the transcript took its real size: kept in view while following. A
   * place to stay at (a message) is put back each time, until the user scrolls: the messages
   * around it are rendered at their real heights a frame or two after it is first put in view.
   */
  settle(): void {
    if (this.keep !== null) {
      const to = this.positionOf(this.keep);
      if (Math.abs(this.scroller.scrollTop - to) > 1) this.scroller.scrollTop = to;
      this.placed = this.scroller.scrollTop;
      return;
    }
    if (!this.following) return;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.placed = this.scroller.scrollTop;
  }

  /** Something that needs the user arrived (an approval): the button says so while scrolled up. */
  needsAttention(): void {
    if (this.following) return;
    this.attention = true;
    this.update();
  }

  private distanceToBottom(): number {
    return this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight;
  }

  private scrolled(): void {
    const top = this.scroller.scrollTop;
    if (this.keep !== null) {
      if (Math.abs(top - this.placed) <= 1) return; // where it was put
      this.keep = null; // the user scrolls: from here on, where they go
    }
    if (this.distanceToBottom() <= AT_BOTTOM) {
      this.following = true;
      this.attention = false;
      this.placed = top;
    } else if (top < this.placed - 1) {
      this.following = false;
    }
    if (!this.following) this.placed = top;
    this.update();
  }

  /** Says where the view is once the scrolling stopped (at most every 300 ms), when that changed. */
  private tell(): void {
    clearTimeout(this.reportTimer);
    this.reportTimer = setTimeout(() => {
      const at = this.scrolledTo;
      const said = JSON.stringify(at);
      if (said === this.reported) return;
      this.reported = said;
      this.report(at);
    }, 300);
  }

  private update(): void {
    this.tell();
    this.button.hidden = this.following;
    this.button.classList.toggle('attention', this.attention);
    this.button.textContent = this.attention ? '↓ An approval is waiting' : '↓ Jump to latest';
  }
}
