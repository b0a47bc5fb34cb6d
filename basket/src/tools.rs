//! The basket tools: a shopping basket kept in a handle between stateless calls.
//!
//! A basket is one typed handle (`Handles<Contents>`, kind `"basket"`): `{"items": {"<sku>":
//! <quantity>}}`. It belongs to the caller (its principal, or one shared anonymous owner when
//! auth is off) and expires after the configured TTL of inactivity: every call that uses it
//! slides the expiry. The typed layer does the read-modify-write, its version check and
//! retries, and tells the basket's listeners of each change.
//!
//! A change whose outcome the store could not learn (it was sent, its answer was lost) is told
//! as such: it may or may not have been applied, so look before repeating it. Looking settles
//! it: `view_basket` is a store `touch`, which bumps the basket's version, so a lost write
//! still on its way (conditioned on the older version) can no longer land afterwards. `add_item` and
//! `remove_item` take an optional client-chosen `request_id`, remembered in the basket (the
//! latest 32, the handles' [`RequestKey`]s): a call repeating a remembered one changes nothing
//! and returns the basket, so such a call can simply be sent again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_lambda::Caller;
use mcp_lambda::handles::{
    HandleError, HandleId, Handles, MAX_REQUEST_KEY_BYTES, RequestKey, Stored,
};
use mcp_lambda::rmcp::handler::server::router::tool::ToolRouter;
use mcp_lambda::rmcp::handler::server::wrapper::{Json, Parameters};
use mcp_lambda::rmcp::model::{ContentBlock, Implementation, IntoContents, ServerConfig};
use mcp_lambda::rmcp::service::RequestContext;
use mcp_lambda::rmcp::{self, RoleServer, schemars, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The handle kind of baskets: open the store's handles with it (`App::handles(KIND)`).
pub const KIND: &str = "basket";

/// How long each step of `place_order` takes: long enough to show a task, short for tests.
const ORDER_STEP: Duration = Duration::from_secs(1);

/// How each tool may run: `place_order` as a task when the client allows one, the others never
/// (`App::tasks(tasks, task_policy)`).
pub fn task_policy(tool: &str, _caller: &Caller) -> mcp_lambda::tasks::TaskPolicy {
    match tool {
        "place_order" => mcp_lambda::tasks::TaskPolicy::Optional,
        _ => mcp_lambda::tasks::TaskPolicy::Never,
    }
}

/// Most units of one SKU in a basket (so also the most one `add_item` call can add).
const MAX_QUANTITY: u32 = 1000;

/// Most distinct SKUs in one basket (keeps a basket far below the handle size limit).
const MAX_LINES: usize = 100;

/// Longest SKU, in characters.
const MAX_SKU_LEN: usize = 64;

/// The basket server: seven tools over typed handles; each basket is also a resource
/// ([`crate::resource`]), which the library serves.
///
/// Built once at start-up and served as it is.
#[derive(Clone)]
pub struct Basket {
    baskets: Handles<Contents>,
    ttl: Duration,
    tool_router: Arc<ToolRouter<Self>>,
}

/// Arguments naming a basket.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct BasketRef {
    /// The `basket_id` returned by `create_basket`.
    basket_id: String,
}

/// Arguments of `list_baskets`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ListBaskets {
    /// Optional: the `next_cursor` of the page before; leave it out for the newest baskets.
    #[serde(default)]
    #[schemars(length(max = 80))]
    cursor: Option<String>,
}

/// What `list_baskets` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct BasketList {
    /// Your baskets on this page, newest first.
    baskets: Vec<BasketView>,
    /// Pass it back as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// Arguments of `add_item`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AddItem {
    /// The `basket_id` returned by `create_basket`.
    basket_id: String,
    /// Product code: 1 to 64 characters of letters, digits, `_` and `-`.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    sku: String,
    /// How many units to add, 1 to 1000.
    #[schemars(range(min = 1, max = 1000))]
    quantity: i64,
    /// Optional: your own unique id for this change (1 to 64 letters, digits, `_` and `-`; a
    /// UUID works). A repeated call with the same request_id on the same basket is applied at
    /// most once.
    #[serde(default)]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    request_id: Option<String>,
}

/// Arguments of `remove_item`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RemoveItem {
    /// The `basket_id` returned by `create_basket`.
    basket_id: String,
    /// Product code of the line to remove.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    sku: String,
    /// Optional: your own unique id for this change, as for `add_item`. A repeated call with the
    /// same request_id on the same basket is applied at most once.
    #[serde(default)]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    request_id: Option<String>,
}

/// One line of a basket.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Line {
    /// Product code.
    sku: String,
    /// Units of this product.
    quantity: u32,
}

/// A basket's contents.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct BasketView {
    /// Pass this to the other basket tools.
    basket_id: String,
    /// Lines ordered by SKU.
    items: Vec<Line>,
    /// Sum of all quantities.
    total_quantity: u64,
    /// When the basket expires unless used again, in Unix seconds.
    expires_at: u64,
    /// Each use of the basket pushes its expiry this many seconds into the future.
    expires_after_idle_secs: u64,
}

/// What `checkout` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CheckoutSummary {
    /// The basket that was checked out; it no longer exists.
    basket_id: String,
    /// Always `"checked_out"`.
    status: String,
    /// The lines bought, ordered by SKU.
    items: Vec<Line>,
    /// Sum of all quantities.
    total_quantity: u64,
}

/// What a basket handle stores: `{"items": {"<sku>": <quantity>}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Contents {
    items: BTreeMap<String, u32>,
}

impl Contents {
    fn lines(&self) -> Vec<Line> {
        self.items
            .iter()
            .map(|(sku, &quantity)| Line {
                sku: sku.clone(),
                quantity,
            })
            .collect()
    }

    fn total(&self) -> u64 {
        self.items.values().map(|&q| u64::from(q)).sum()
    }
}

/// What a read-modify-write can fail with: the store, or the change itself refusing.
enum Failure {
    Store(HandleError),
    Refused(ToolError),
}

impl From<HandleError> for Failure {
    fn from(error: HandleError) -> Self {
        Self::Store(error)
    }
}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Self {
        Self::Refused(error)
    }
}

/// Why a tool call failed; shown to the caller as a tool result with `isError: true`.
#[derive(Debug)]
pub(crate) enum ToolError {
    /// Bad arguments; the text says which and what is allowed.
    Invalid(String),
    /// The basket does not exist for this caller (unknown, expired, checked out, or another
    /// principal's: the answer is the same). Carries the configured TTL for the message.
    Gone(Duration),
    /// The handle store is down, and nothing was changed.
    Unavailable,
    /// The store did not confirm a change: it may or may not have been applied.
    Unconfirmed(Unconfirmed),
    /// Too many concurrent writers on one basket.
    Busy,
    /// The caller created as many baskets as one caller may for now.
    TooMany {
        /// Baskets per window.
        max: u32,
        /// Seconds until more may be created.
        retry_after_secs: u64,
    },
    /// A bug or corrupt data; details are logged, not shown.
    Internal,
}

impl ToolError {
    fn message(&self) -> String {
        match self {
            Self::Invalid(text) => text.clone(),
            Self::Gone(ttl) => format!(
                "This basket does not exist or has expired (baskets expire after {} of \
                 inactivity). Call create_basket to get a new basket_id, then add the items \
                 again.",
                human(*ttl)
            ),
            Self::Unavailable => "The basket service is temporarily unavailable. Nothing was \
                changed; try the same call again in a few seconds."
                .into(),
            Self::Unconfirmed(Unconfirmed::Create) => "The basket service is temporarily \
                unavailable. No basket you can use was created (one may have been started, but \
                its basket_id never reached you, so it expires unused); try the same call again \
                in a few seconds."
                .into(),
            Self::Unconfirmed(Unconfirmed::Change { request_id: true }) => "The basket service \
                did not confirm this change in time, so it may or may not have been applied. \
                Repeat this exact call with the same request_id (a change is applied at most once \
                per request_id), or call view_basket to see the basket."
                .into(),
            Self::Unconfirmed(Unconfirmed::Change { request_id: false }) => "The basket service \
                did not confirm this change in time, so it may or may not have been applied. \
                Call view_basket to see the basket before trying again: what it shows is final, \
                a change it does not show will not be applied later. (Pass a request_id to \
                add_item and remove_item to make a repeated call safe.)"
                .into(),
            Self::Unconfirmed(Unconfirmed::Checkout) => "The basket service did not confirm the \
                checkout in time, so the basket may or may not have been checked out. Call \
                view_basket: if the basket still exists, it was not checked out (and no longer \
                will be) and you can call checkout again; if it no longer exists, the checkout \
                went through."
                .into(),
            Self::Busy => "The basket is being changed by other requests right now. Nothing was \
                changed; try the same call again."
                .into(),
            Self::TooMany {
                max,
                retry_after_secs,
            } => format!(
                "You have created {max} baskets recently, the most one caller may; no basket was \
                 created. Use one you have (view_basket), or try again in {retry_after_secs} s."
            ),
            Self::Internal => "Something went wrong on the server. Try again; if it keeps \
                failing, call create_basket for a new basket."
                .into(),
        }
    }
}

/// Which call an unconfirmed change belongs to: the advice differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unconfirmed {
    /// `create_basket`: whatever was made is unreachable, so a retry is safe.
    Create,
    /// `add_item` or `remove_item`, with or without a `request_id`.
    Change {
        /// Whether the call carried a `request_id` (then repeating it is safe).
        request_id: bool,
    },
    /// `checkout`.
    Checkout,
}

impl IntoContents for ToolError {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.message())]
    }
}

#[tool_router(router = tool_router)]
impl Basket {
    /// A basket server over `baskets`, which expire after their TTL without use (the tool
    /// descriptions state it).
    pub fn new(baskets: Handles<Contents>) -> Self {
        let ttl = baskets.ttl();
        let mut router = Self::tool_router();
        let ttl_text = human(ttl);
        // The descriptions state the configured expiry, so the model can plan around it.
        for route in router.map.values_mut() {
            if let Some(description) = &route.attr.description {
                let text = description.replace("24 h", &ttl_text);
                route.attr.description = Some(text.into());
            }
        }
        Self {
            baskets,
            ttl,
            tool_router: Arc::new(router),
        }
    }

    #[tool(
        description = "Create an empty shopping basket and return its basket_id. Pass the \
            basket_id to add_item, remove_item, view_basket and checkout. The basket expires \
            after 24 h of inactivity (every call that uses it resets the clock); after that, \
            create a new one.",
        annotations(
            title = "Create basket",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_basket(&self, caller: Caller) -> Result<Json<BasketView>, ToolError> {
        let basket = self
            .baskets
            .create(&caller, Contents::default())
            .await
            .map_err(|e| self.explain_write(e, Unconfirmed::Create))?;
        Ok(Json(self.view(&basket)))
    }

    #[tool(
        description = "List your baskets, newest first, with their lines, a page at a time: \
            pass next_cursor back as cursor for the next page until there is none. Listing does \
            not count as use: the baskets' expiry stays where it is. A basket created a moment \
            ago may take a second to appear.",
        annotations(title = "List baskets", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_baskets(
        &self,
        caller: Caller,
        Parameters(args): Parameters<ListBaskets>,
    ) -> Result<Json<BasketList>, ToolError> {
        let page = self
            .baskets
            .list(&caller, args.cursor.as_deref())
            .await
            .map_err(|e| match e {
                HandleError::Invalid(message) => ToolError::Invalid(message),
                other => self.explain(other),
            })?;
        Ok(Json(BasketList {
            baskets: page.items.iter().map(|basket| self.view(basket)).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    #[tool(
        description = "Add units of a product to a basket. Adding a SKU already in the basket \
            increases its quantity (at most 1000 units per SKU, 100 SKUs per basket). Returns \
            the updated basket. Baskets expire after 24 h of inactivity. Pass an optional \
            request_id (your own unique id for this change, e.g. a UUID) to make the call safe \
            to repeat: the basket remembers its latest 32 request_ids, and a repeated call with \
            one of them changes nothing and returns the basket. If an answer says the change \
            may or may not have been applied, repeat the call with the same request_id, or call \
            view_basket before trying again.",
        annotations(
            title = "Add item",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_item(
        &self,
        caller: Caller,
        Parameters(args): Parameters<AddItem>,
    ) -> Result<Json<BasketView>, ToolError> {
        let sku = validate_sku(&args.sku)?;
        let quantity = validate_quantity(args.quantity)?;
        let request = request(args.request_id, || format!("add {sku} {quantity}"))?;
        let id = self.basket_id(&args.basket_id)?;
        let basket = self
            .modify(&caller, id, request, |contents| {
                if !contents.items.contains_key(sku) && contents.items.len() >= MAX_LINES {
                    return Err(ToolError::Invalid(format!(
                        "The basket already holds {MAX_LINES} different SKUs, the most allowed. \
                         Remove one or check out first."
                    )));
                }
                let line = contents.items.entry(sku.to_owned()).or_insert(0);
                let total = *line + quantity;
                if total > MAX_QUANTITY {
                    return Err(ToolError::Invalid(format!(
                        "The basket already holds {line} of {sku}; adding {quantity} would make \
                         {total}, above the limit of {MAX_QUANTITY} per SKU."
                    )));
                }
                *line = total;
                Ok(())
            })
            .await?;
        Ok(Json(self.view(&basket)))
    }

    #[tool(
        description = "Remove a product line (all its units) from a basket. Returns the \
            updated basket. Baskets expire after 24 h of inactivity. Takes an optional \
            request_id as add_item does: a repeated call with the same request_id changes \
            nothing and returns the basket.",
        annotations(
            title = "Remove item",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_item(
        &self,
        caller: Caller,
        Parameters(args): Parameters<RemoveItem>,
    ) -> Result<Json<BasketView>, ToolError> {
        let sku = validate_sku(&args.sku)?;
        let request = request(args.request_id, || format!("remove {sku}"))?;
        let id = self.basket_id(&args.basket_id)?;
        let basket = self
            .modify(&caller, id, request, |contents| {
                contents.items.remove(sku).map(drop).ok_or_else(|| {
                    ToolError::Invalid(format!(
                        "{sku} is not in this basket; call view_basket to see its lines."
                    ))
                })
            })
            .await?;
        Ok(Json(self.view(&basket)))
    }

    #[tool(
        description = "Show the lines and total quantity of a basket. Viewing counts as use: \
            it resets the basket's 24 h inactivity expiry. What it shows is final about earlier \
            calls: a change that was reported as maybe applied and is not shown will not be \
            applied later.",
        annotations(title = "View basket", read_only_hint = true, open_world_hint = false)
    )]
    async fn view_basket(
        &self,
        caller: Caller,
        Parameters(args): Parameters<BasketRef>,
    ) -> Result<Json<BasketView>, ToolError> {
        let id = self.basket_id(&args.basket_id)?;
        let basket = self
            .baskets
            .touch(&caller, id)
            .await
            .map_err(|e| self.explain(e))?;
        Ok(Json(self.view(&basket)))
    }

    #[tool(
        description = "Place the order for a basket: takes a few seconds (payment, stock, \
            confirmation) and reports progress, then closes the basket like checkout and returns \
            the same summary. Clients that support the tasks extension get a task to poll \
            instead of waiting.",
        annotations(
            title = "Place order",
            read_only_hint = false,
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    /// The honest shape for a task: every step before the irreversible one only waits or
    /// reads, and the irreversible step is the last, one conditional write (`checkout`'s
    /// delete at the version it read). A cancel or a worker out of time drops this future at
    /// the await it is parked at, so a stop before the write leaves the basket untouched.
    async fn place_order(
        &self,
        caller: Caller,
        ctx: RequestContext<RoleServer>,
        Parameters(args): Parameters<BasketRef>,
    ) -> Result<Json<CheckoutSummary>, ToolError> {
        let token = ctx.meta.get_progress_token();
        let steps = ["taking payment", "reserving stock", "confirming"];
        for (n, step) in steps.iter().enumerate() {
            if let Some(token) = &token {
                let _ = ctx
                    .peer
                    .notify_progress(
                        rmcp::model::ProgressNotificationParam::new(token.clone(), n as f64)
                            .with_total(steps.len() as f64)
                            .with_message(format!("{step} ({} of {})", n + 1, steps.len())),
                    )
                    .await;
            }
            tokio::time::sleep(ORDER_STEP).await;
        }
        self.checkout(caller, Parameters(args)).await
    }

    #[tool(
        description = "Check out a basket: returns a summary of what was bought and closes the \
            basket, so its basket_id stops working. Call create_basket to shop again. An empty \
            basket cannot be checked out.",
        annotations(
            title = "Check out",
            read_only_hint = false,
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn checkout(
        &self,
        caller: Caller,
        Parameters(args): Parameters<BasketRef>,
    ) -> Result<Json<CheckoutSummary>, ToolError> {
        let id = self.basket_id(&args.basket_id)?;
        // Deleted at the version read: the summary is exactly what was checked out.
        let basket = self
            .baskets
            .take(&caller, id, |contents| {
                if contents.items.is_empty() {
                    return Err(Failure::Refused(ToolError::Invalid(
                        "The basket is empty; add items with add_item before checking out.".into(),
                    )));
                }
                Ok(())
            })
            .await
            .map_err(|failure| self.explain_failure(failure, Unconfirmed::Checkout))?;
        Ok(Json(CheckoutSummary {
            basket_id: id.to_string(),
            status: "checked_out".into(),
            items: basket.value.lines(),
            total_quantity: basket.value.total(),
        }))
    }
}

/// What `serverInfo`'s instructions tell the client.
const INSTRUCTIONS: &str = "A shopping basket kept between calls. Call create_basket first and \
    pass the basket_id it returns to add_item, remove_item, view_basket and checkout. Each basket \
    can also be read as the resource basket://{basket_id}. Baskets belong to the caller and \
    expire after a period of inactivity; when a basket_id stops working, create a new basket.";

/// The tools; the library serves each basket as a resource ([`crate::resource`]) and announces what
/// `subscriptions/listen` needs (`tools.listChanged`, `resources.subscribe`).
#[tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for Basket {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcp-lambda-basket",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }
}

impl Basket {
    /// Changes a basket, with the typed handles' read-modify-write. With a `request`, a change
    /// the basket remembers is not applied again: the basket is returned as it is.
    async fn modify(
        &self,
        caller: &Caller,
        id: HandleId,
        request: Option<RequestKey>,
        mut change: impl FnMut(&mut Contents) -> Result<(), ToolError> + Send,
    ) -> Result<Stored<Contents>, ToolError> {
        let unconfirmed = Unconfirmed::Change {
            request_id: request.is_some(),
        };
        self.baskets
            .try_modify(caller, id, request, |contents| {
                change(contents).map_err(Failure::Refused)
            })
            .await
            .map_err(|failure| self.explain_failure(failure, unconfirmed))
    }

    /// A read-modify-write's failure as the caller should see it.
    fn explain_failure(&self, failure: Failure, what: Unconfirmed) -> ToolError {
        match failure {
            Failure::Refused(error) => error,
            Failure::Store(HandleError::RequestKeyReused { key, change }) => {
                ToolError::Invalid(format!(
                    "request_id {key} was already used on this basket for another change \
                     ({change}). Use a new request_id for each change."
                ))
            }
            Failure::Store(error) => self.explain_write(error, what),
        }
    }

    /// Parses a client-supplied id; anything that is not a handle id is simply not a basket.
    fn basket_id(&self, text: &str) -> Result<HandleId, ToolError> {
        text.trim().parse().map_err(|_| ToolError::Gone(self.ttl))
    }

    /// A store error of a change the caller must know the fate of, as the caller should see it:
    /// an unknown outcome is said to be unknown, with `what` deciding the advice.
    fn explain_write(&self, error: HandleError, what: Unconfirmed) -> ToolError {
        match error {
            HandleError::Indeterminate(reason) => {
                tracing::warn!(%reason, "handle store did not confirm a write");
                ToolError::Unconfirmed(what)
            }
            other => self.explain(other),
        }
    }

    /// A store error as the caller should see it. Reads never answer `Indeterminate`; for a
    /// touch (`view_basket`) it only means the expiry may or may not have moved, so it reads as
    /// unavailable: the basket's contents did not change.
    fn explain(&self, error: HandleError) -> ToolError {
        match error {
            HandleError::NotFound => ToolError::Gone(self.ttl),
            HandleError::Conflict { .. } => ToolError::Busy,
            HandleError::CallerLimit {
                max, retry_after, ..
            } => ToolError::TooMany {
                max,
                retry_after_secs: retry_after.as_secs().max(1),
            },
            HandleError::Unavailable(reason) | HandleError::Indeterminate(reason) => {
                tracing::warn!(%reason, "handle store unavailable");
                ToolError::Unavailable
            }
            other => {
                tracing::error!(error = %other, "handle store refused a basket operation");
                ToolError::Internal
            }
        }
    }

    fn view(&self, basket: &Stored<Contents>) -> BasketView {
        view(basket, self.ttl)
    }
}

/// A basket as `view_basket` (and a resource read) shows it.
pub(crate) fn view(basket: &Stored<Contents>, ttl: Duration) -> BasketView {
    BasketView {
        basket_id: basket.id.to_string(),
        items: basket.value.lines(),
        total_quantity: basket.value.total(),
        expires_at: basket.expires_at_secs(),
        expires_after_idle_secs: ttl.as_secs(),
    }
}

fn validate_sku(sku: &str) -> Result<&str, ToolError> {
    let ok = (1..=MAX_SKU_LEN).contains(&sku.len())
        && sku
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(sku)
    } else {
        Err(ToolError::Invalid(format!(
            "sku must be 1 to {MAX_SKU_LEN} characters of letters, digits, '_' and '-' \
             (e.g. \"TEA-001\")."
        )))
    }
}

/// A call's optional `request_id` with its change (`describe` names it), checked.
fn request(
    request_id: Option<String>,
    describe: impl FnOnce() -> String,
) -> Result<Option<RequestKey>, ToolError> {
    let Some(id) = request_id else {
        return Ok(None);
    };
    RequestKey::new(id, describe()).map(Some).map_err(|_| {
        ToolError::Invalid(format!(
            "request_id must be 1 to {MAX_REQUEST_KEY_BYTES} characters of letters, digits, '_' \
             and '-' (a UUID works), or left out."
        ))
    })
}

fn validate_quantity(quantity: i64) -> Result<u32, ToolError> {
    u32::try_from(quantity)
        .ok()
        .filter(|q| (1..=MAX_QUANTITY).contains(q))
        .ok_or_else(|| {
            ToolError::Invalid(format!(
                "quantity must be a whole number from 1 to {MAX_QUANTITY}, got {quantity}."
            ))
        })
}

/// `24 h`, `90 min`, `45 s`: the TTL as tool descriptions and messages show it.
pub(crate) fn human(ttl: Duration) -> String {
    let secs = ttl.as_secs();
    match secs {
        0 => format!("{} ms", ttl.as_millis()),
        s if s % 3600 == 0 => format!("{} h", s / 3600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skus_follow_the_documented_alphabet_and_length() {
        for good in ["A", "tea-001", "X_Y", &"a".repeat(64)] {
            assert!(validate_sku(good).is_ok(), "{good}");
        }
        for bad in ["", "tea 001", "tea/1", "é", &"a".repeat(65)] {
            assert!(validate_sku(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities_outside_one_to_a_thousand_are_refused() {
        assert_eq!(validate_quantity(1).unwrap(), 1);
        assert_eq!(validate_quantity(1000).unwrap(), 1000);
        for bad in [0, -1, 1001, i64::MAX, i64::MIN] {
            assert!(validate_quantity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ttls_read_naturally() {
        assert_eq!(human(Duration::from_secs(86_400)), "24 h");
        assert_eq!(human(Duration::from_secs(5_400)), "90 min");
        assert_eq!(human(Duration::from_secs(2)), "2 s");
    }

    #[test]
    fn descriptions_state_the_configured_expiry() {
        let basket = Basket::new(Handles::new(
            mcp_lambda::handles::memory(),
            KIND,
            Duration::from_secs(2),
        ));
        let tools = basket.tool_router.list_all();
        let create = tools.iter().find(|t| t.name == "create_basket").unwrap();
        let text = create.description.as_deref().unwrap();
        assert!(text.contains("expires after 2 s of inactivity"), "{text}");

        let basket = Basket::new(Handles::new(
            mcp_lambda::handles::memory(),
            KIND,
            Duration::from_secs(86_400),
        ));
        let tools = basket.tool_router.list_all();
        let create = tools.iter().find(|t| t.name == "create_basket").unwrap();
        let text = create.description.as_deref().unwrap();
        assert!(text.contains("expires after 24 h of inactivity"), "{text}");
        assert!(tools.iter().all(|t| t.output_schema.is_some()), "{tools:?}");
    }

    #[test]
    fn a_store_outage_asks_the_caller_to_try_again_and_changes_nothing() {
        let basket = Basket::new(Handles::new(
            mcp_lambda::handles::memory(),
            KIND,
            Duration::from_secs(60),
        ));
        let error = basket.explain(HandleError::Unavailable("connection refused".into()));
        let text = error.message();
        assert!(text.contains("try the same call again"), "{text}");
        assert!(
            !text.contains("connection refused"),
            "backend details stay in the logs"
        );
        let busy = basket
            .explain(HandleError::Conflict { current_version: 9 })
            .message();
        assert!(busy.contains("try the same call again"), "{busy}");
    }

    #[test]
    fn an_unconfirmed_change_says_it_may_have_been_applied_and_how_to_find_out() {
        let basket = Basket::new(Handles::new(
            mcp_lambda::handles::memory(),
            KIND,
            Duration::from_secs(60),
        ));
        let lost = || HandleError::Indeterminate("read timeout".into());
        for what in [
            Unconfirmed::Change { request_id: true },
            Unconfirmed::Change { request_id: false },
            Unconfirmed::Checkout,
        ] {
            let text = basket.explain_write(lost(), what).message();
            assert!(text.contains("may or may not have been"), "{text}");
            assert!(text.contains("view_basket"), "{text}");
            assert!(!text.contains("Nothing was changed"), "{text}");
            assert!(!text.contains("temporarily unavailable"), "{text}");
            assert!(!text.contains("read timeout"), "details stay in the logs");
        }
        let text = basket
            .explain_write(lost(), Unconfirmed::Change { request_id: true })
            .message();
        assert!(text.contains("same request_id"), "{text}");
        // A create whose answer was lost made nothing the caller can reach: retrying is safe.
        let text = basket.explain_write(lost(), Unconfirmed::Create).message();
        assert!(text.contains("try the same call again"), "{text}");
        // A touch (view_basket) changes no contents: unavailable, try again.
        let text = basket.explain(lost()).message();
        assert!(text.contains("temporarily unavailable"), "{text}");
    }

    #[test]
    fn unknown_and_expired_read_the_same() {
        let ttl = Duration::from_secs(60);
        let basket = Basket::new(Handles::new(mcp_lambda::handles::memory(), KIND, ttl));
        let malformed = basket.basket_id("nope").unwrap_err().message();
        let missing = basket.explain(HandleError::NotFound).message();
        assert_eq!(malformed, missing);
        assert!(missing.contains("create_basket"), "{missing}");
    }
}
