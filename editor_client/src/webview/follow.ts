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
import { el } from './dom';

/** How close to the bottom counts as at the bottom (px). */
const AT_BOTTOM = 40;

export class Follow {
  private following = true;
  /** Where the view was last put (scrollTop): a position above it is the user's scroll. */
  private placed = 0;
  private attention = false;
  /** A place to put the view back at on the next settle (the same session drawn again). */
  private keep: number | null = null;
  readonly button: HTMLButtonElement;

  constructor(
    private readonly scroller: HTMLElement,
    content: HTMLElement,
  ) {
    this.button = el('button', 'jump-latest', '↓ Jump to latest');
    this.button.type = 'button';
    this.button.id = 'jump-latest';
    this.button.hidden = true;
    this.button.title = 'Scroll to the newest message and follow it';
    this.button.addEventListener('click', () => this.follow());
    scroller.appendChild(this.button);
    new ResizeObserver(() => this.settle()).observe(content);
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
   * a restart's resume) while the user had scrolled up to `top`: they stay there, not taken to the
   * newest message under their eyes. Applied when the new drawing settles.
   */
  stayAt(top: number): void {
    this.following = false;
    this.keep = top;
    this.update();
  }

  /** Where the user scrolled up to; null while following. */
  get scrolledTo(): number | null {
    return this.following ? null : this.scroller.scrollTop;
  }

  /** Something new arrived: kept in view while following. */
  settle(): void {
    if (this.keep !== null) {
      this.scroller.scrollTop = this.keep;
      this.placed = this.scroller.scrollTop;
      this.keep = null;
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

  private update(): void {
    this.button.hidden = this.following;
    this.button.classList.toggle('attention', this.attention);
    this.button.textContent = this.attention ? '↓ An approval is waiting' : '↓ Jump to latest';
  }
}
