"""Mail in the kernel test robot's shape (docs/notify.md), and its delivery by smtplib.

One mail per summary's report: To the culprit's author (a bisect's answer), else each
author of the range's commits, Cc the lists; its subject
``[perflab] [BRANCH] SHA12: BENCHMARK.METRIC -29.9% regression``; its body the
`report change` text and the tags a fix carries. Each follow-up answers it in its thread:
the report's Message-ID is stable per summary, so a retried mail is one mail to a
client that deduplicates, and a follow-up's In-Reply-To and References name it. Our own
lines are wrapped at 72 columns; the report's table is the lkp table as lkp prints it.
"""

from __future__ import annotations

import smtplib
import ssl
import textwrap
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, parseaddr

from perflab.model.notify import REPORTED, Event
from perflab.notify.config import NotifyConfig, SmtpServer
from perflab.notify.facts import SummaryFacts

WIDTH = 72


class NoRecipient(Exception):
    """A mail with nobody to send it to: no author address, no list."""


def subject(facts: SummaryFacts) -> str:
    branch = f"[{facts.branch}] " if facts.branch else ""
    return f"[perflab] {branch}{facts.sha12}: {facts.stat} {facts.shift} {facts.kind}"


def message_id(summary_id: int, first_bad: str, mail_from: str, event: Event | None = None) -> str:
    """The summary's thread id (``event`` None or its report), else the follow-up's: stable."""
    domain = parseaddr(mail_from)[1].rpartition("@")[2] or "localhost"
    tail = "" if event is None or event.kind == REPORTED else "." + event.key.split(" ", 2)[-1].replace(" ", ".")
    return f"<perflab.summary-{summary_id}.{first_bad[:12]}{tail}@{domain}>"


def alert_link(config: NotifyConfig, facts: SummaryFacts) -> str | None:
    return f"{config.dashboard_url}/alerts/{facts.headline.id}" if config.dashboard_url else None


def recipients(facts: SummaryFacts, config: NotifyConfig) -> tuple[list[str], list[str]]:
    """(To, Cc): the culprit's author, else the range's authors (unless mail goes to the list
    only), the lists in Cc; with no author address the lists are the To."""
    authors = [facts.culprit] if facts.culprit else list(facts.commits)
    to = list(dict.fromkeys(c.address for c in authors if "@" in c.email)) if config.to_authors else []
    cc = [a for a in config.cc if _address(a) not in {_address(t) for t in to}]
    if not to:
        to, cc = cc, []
    if not to:
        raise NoRecipient("no recipient: the commits name no author address and PERFLAB_MAIL_CC is empty")
    return to, cc


def _address(text: str) -> str:
    return parseaddr(text)[1].lower()


def compose(facts: SummaryFacts, event: Event, config: NotifyConfig, body: str) -> EmailMessage:
    """The mail of ``event`` on ``facts``' summary, with ``body`` as its text."""
    assert config.mail_from is not None
    to, cc = recipients(facts, config)
    message = EmailMessage()
    thread = message_id(facts.summary.id, facts.summary.first_bad, config.mail_from)
    message["From"] = config.mail_from
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Subject"] = subject(facts) if event.kind == REPORTED else "Re: " + subject(facts)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = message_id(facts.summary.id, facts.summary.first_bad, config.mail_from, event)
    if event.kind != REPORTED:
        message["In-Reply-To"] = thread
        message["References"] = thread
    message["X-Perflab-Event"] = event.kind
    message.set_content(body)
    return message


def report_body(facts: SummaryFacts, config: NotifyConfig) -> str:
    """The report's text: who is told why, the `report change` text, the tags for the fix."""
    out = ["Hello,", ""]
    if facts.culprit is not None:
        out += _wrap(f'perflab bisected the change to commit {facts.culprit.sha[:12]} ("{facts.culprit.subject}") '
                     f"by {facts.culprit.address}.") + [""]
    elif len(facts.commits) > 1:
        out += _wrap(f"The change lies in a range of {len(facts.commits)} commits, not bisected yet:")
        out += [f"  {c.sha[:12]} {c.subject[:40]} ({c.author})" for c in facts.commits[:20]] + [""]
    out += [facts.report_text.rstrip("\n")] if facts.report_text else _wrap(f"(no report: {facts.report_missing})")
    if len(facts.summary.alerts) > 1:
        out += ["", f"The summary's {len(facts.summary.alerts)} alerts (the same commits):"]
        out += [f"  alert {a.id}: {a.series_name[:44]} {a.oriented_pct:+.1f}% {a.kind} ({a.state})"
                for a in facts.summary.alerts]
    return "\n".join(out + ["", *tags(facts, config)]) + "\n"


def tags(facts: SummaryFacts, config: NotifyConfig) -> list[str]:
    link = alert_link(config, facts)
    return [*_wrap("If you fix the issue in a separate commit (not a new version of the same one), "
                   "kindly add the following tags"),
            f"| Reported-by: {_reporter(config)}",
            *([f"| Closes: {link}"] if link else []), "",
            f"'perflab alert {facts.headline.id}' shows the alert and triages it.", "", "-- ", "perflab"]


def _reporter(config: NotifyConfig) -> str:
    name, address = parseaddr(config.mail_from or "")
    return f"{name or 'perflab'} <{address}>"


def follow_up_body(facts: SummaryFacts, event: Event, config: NotifyConfig) -> str:
    what = {"bisected": f"bisected to commit {facts.sha12}", "recovered": "recovered: the level is back",
            "withdrawn": "withdrawn: the robot's rerun did not reproduce it (noise)",
            "fixed": "marked fixed", "invalid": "marked invalid (noise)", "wontfix": "marked wontfix"}
    out = ["Hello,", "", *_wrap(f"perflab: the {facts.stat} {facts.shift} {facts.kind} at {facts.sha12} "
                                f"(summary {facts.summary.id}) is {what.get(event.kind, event.kind)}.")]
    if event.note:
        out += ["", *_wrap(event.note, indent="  ")]
    if event.kind == "bisected":
        out += ["", *report_body(facts, config).splitlines()[2:]]
        return "\n".join(out) + "\n"
    link = alert_link(config, facts)
    out += ["", *([f"The alert: {link}"] if link else []), f"'perflab alert {facts.headline.id}' shows it.",
            "", "-- ", "perflab"]
    return "\n".join(out) + "\n"


def digest(subjects: list[tuple[str, str | None]], config: NotifyConfig, key: str) -> EmailMessage:
    """One mail for the reports over the pass's limit: each one's subject and link."""
    assert config.mail_from is not None
    message = EmailMessage()
    message["From"] = config.mail_from
    message["To"] = ", ".join(config.cc) or config.mail_from
    message["Subject"] = f"[perflab] {len(subjects)} more reports (over the limit of {config.max_mails} mails)"
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = f"<perflab.digest.{key}@{parseaddr(config.mail_from)[1].rpartition('@')[2] or 'localhost'}>"
    body = ["Hello,", "", *_wrap(f"This pass raised more than {config.max_mails} mails; these went into "
                                 "this one instead:"), ""]
    for line, link in subjects:
        body += [f"  {line}", *([f"    {link}"] if link else [])]
    message.set_content("\n".join([*body, "", "-- ", "perflab"]) + "\n")
    return message


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [""]


def send(server: SmtpServer, message: EmailMessage, timeout_s: float) -> None:
    """Deliver ``message`` to its To and Cc. Raises OSError or smtplib.SMTPException."""
    context = ssl.create_default_context()
    smtp: smtplib.SMTP
    if server.scheme == "smtps":
        smtp = smtplib.SMTP_SSL(server.host, server.port, timeout=timeout_s, context=context)
    else:
        smtp = smtplib.SMTP(server.host, server.port, timeout=timeout_s)
    with smtp:
        if server.scheme == "smtp+starttls":
            smtp.starttls(context=context)
        if server.user:
            smtp.login(server.user, server.password or "")
        addresses = [a for _, a in getaddresses([message["To"] or "", message["Cc"] or ""]) if a]
        smtp.send_message(message, to_addrs=addresses)
