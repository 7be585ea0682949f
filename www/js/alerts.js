// alerts.js: the error banner (`#error`, role=alert) and the notice (`#notice`, role=status)
// above the plot. The banner has a close button (its "×" is CSS, so the banner's textContent
// stays the message the tests and screen readers read); the notice belongs to the file shown
// and steps aside while an error about another file is up, coming back when that is dismissed.

export class Alerts {
  /**
   * @param {HTMLElement} alert  `#error`
   * @param {HTMLElement} notice  `#notice`
   * @param {() => void} onDismiss  the banner was closed by the user (the page leaves `error`)
   */
  constructor(alert, notice, onDismiss) {
    this.alert = alert;
    this.notice = notice;
    this.text = document.createElement('span');
    this.text.className = 'error-text';
    const close = document.createElement('button');
    close.type = 'button';
    close.id = 'error-close';
    close.className = 'secondary icon';
    close.title = 'Dismiss';
    close.setAttribute('aria-label', 'Dismiss this message');
    close.addEventListener('click', () => {
      this.setError('');
      onDismiss();
    });
    alert.replaceChildren(this.text, close);
    /** The shown file's notice (Rust's text with the file name), kept while an error hides it. */
    this.noticeText = '';
    /** Whether the notice steps aside (an open in progress, or its error up). */
    this.noticeAside = false;
  }

  /** Shows `message` in the banner, or hides the banner (''). @param {string} message */
  setError(message) {
    this.text.textContent = message;
    this.alert.hidden = message === '';
    if (message === '' && this.noticeAside) this.asideNotice(false);
  }

  /** The shown file's notice ('' for none). @param {string} text */
  setNotice(text) {
    this.noticeText = text;
    this.renderNotice();
  }

  /**
   * Hides the notice while another file opens or its error is up (true); shows it again (false).
   * @param {boolean} aside
   */
  asideNotice(aside) {
    this.noticeAside = aside;
    this.renderNotice();
  }

  renderNotice() {
    const text = this.noticeAside ? '' : this.noticeText;
    if (this.notice.textContent !== text) this.notice.textContent = text;
    this.notice.hidden = text === '';
  }
}
