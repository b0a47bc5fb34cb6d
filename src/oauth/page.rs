//! The two pages a person sees: the consent page (which client, where it sends them back, which
//! scopes; approve or deny, each a POST) and the error page (why nothing was sent back to the
//! client). Plain server-rendered HTML: no script, labelled controls, one heading, readable
//! without styles; framing refused by the response's headers.

/// Text made safe to place in HTML text and in a double-quoted attribute.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#111;background:#fff}\
h1{font-size:1.4rem}dt{font-weight:600}dd{margin:0 0 .75rem 0;overflow-wrap:anywhere}\
.warn{border-left:4px solid #8a4b00;padding:.25rem .75rem;background:#fff4e5}\
.actions{display:flex;gap:1rem;margin-top:1.5rem}\
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:4px;border:2px solid #1a4d8f;cursor:pointer}\
button[value=approve]{background:#1a4d8f;color:#fff}button[value=deny]{background:#fff;color:#1a4d8f}\
button:focus-visible{outline:3px solid #000;outline-offset:2px}";

fn document(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n\
<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// What the consent page shows.
pub(crate) struct Consent<'a> {
    /// The client's name as registered (or its id), shown as the client says it.
    pub(crate) client_name: &'a str,
    pub(crate) client_id: &'a str,
    /// For a client identified by a metadata document: the domain it was fetched from.
    pub(crate) verified_domain: Option<&'a str>,
    /// The host (or private-use scheme) the browser will be sent back to.
    pub(crate) redirect_host: &'a str,
    pub(crate) redirect_local_only: bool,
    pub(crate) scopes: &'a [String],
    pub(crate) server_name: &'a str,
    /// The identity provider the person will log in with.
    pub(crate) upstream_host: &'a str,
    /// Where the form posts, and its two hidden fields.
    pub(crate) action: &'a str,
    pub(crate) request: &'a str,
    pub(crate) csrf: &'a str,
}

pub(crate) fn consent(c: &Consent<'_>) -> String {
    let scopes = if c.scopes.is_empty() {
        "<dd>no particular permission (a valid login only)</dd>".to_string()
    } else {
        c.scopes
            .iter()
            .map(|s| format!("<dd><code>{}</code></dd>", escape(s)))
            .collect::<String>()
    };
    let verified = c.verified_domain.map_or(String::new(), |domain| {
        format!(
            "<dt>Identified by</dt><dd>a client metadata document on <strong>{}</strong></dd>",
            escape(domain)
        )
    });
    let local_warning = if c.redirect_local_only {
        "<p class=\"warn\" role=\"note\">This client receives your authorization on this device \
(a local address or an app link). Any program on this device could be listening there: approve \
only if you started this connection yourself, just now.</p>\n"
    } else {
        ""
    };
    let body = format!(
        "<h1>Allow {client} to use {server}?</h1>\n\
<p>An application asks to act on your behalf at <strong>{server}</strong>. If you approve, you \
will log in with <strong>{upstream}</strong>, and the application will be able to do what these \
permissions allow until you revoke it.</p>\n\
<dl>\n<dt>Application</dt><dd><strong>{client}</strong> (client id <code>{client_id}</code>)</dd>\n\
{verified}<dt>Sends you back to</dt><dd><strong>{redirect}</strong></dd>\n\
<dt>Permissions</dt>{scopes}\n</dl>\n{local_warning}\
<p>If you did not just try to connect an application, deny.</p>\n\
<form method=\"post\" action=\"{action}\">\n\
<input type=\"hidden\" name=\"request\" value=\"{request}\">\n\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
<div class=\"actions\">\n\
<button type=\"submit\" name=\"decision\" value=\"approve\">Approve and log in</button>\n\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\n\
</div>\n</form>\n",
        client = escape(c.client_name),
        client_id = escape(c.client_id),
        server = escape(c.server_name),
        upstream = escape(c.upstream_host),
        redirect = escape(c.redirect_host),
        action = escape(c.action),
        request = escape(c.request),
        csrf = escape(c.csrf),
    );
    document(&format!("Allow {}?", c.client_name), &body)
}

/// A page that ends the flow in the browser: nothing is sent to the client.
pub(crate) fn error(title: &str, explanation: &str) -> String {
    let body = format!(
        "<h1>{}</h1>\n<p role=\"alert\">{}</p>\n<p>Nothing was sent to the application. Close \
this page and start the connection again from the application.</p>\n",
        escape(title),
        escape(explanation)
    );
    document(title, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_a_client_chose_is_escaped() {
        let scopes = vec!["a<b".to_string()];
        let page = consent(&Consent {
            client_name: "<script>alert(1)</script>",
            client_id: "id\"><img src=x>",
            verified_domain: Some("docs.example.com"),
            redirect_host: "evil.example\"",
            redirect_local_only: true,
            scopes: &scopes,
            server_name: "mcp.example.com",
            upstream_host: "idp.example.com",
            action: "/oauth/authorize",
            request: "r1",
            csrf: "c1",
        });
        assert!(!page.contains("<script>"));
        assert!(!page.contains("<img"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("a&lt;b"));
        assert!(page.contains("evil.example&quot;"));
        assert!(page.contains("class=\"warn\""));
        assert!(page.contains("docs.example.com"));
        assert_eq!(page.matches("<form method=\"post\"").count(), 1);
        let page = error("Unknown client", "x<y");
        assert!(page.contains("x&lt;y"));
    }
}
