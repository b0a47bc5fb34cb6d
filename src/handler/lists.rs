//! The four lists (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) through one path: a page cut with a signed
//! cursor, the cache hint, `serverInfo`.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_PAGE_SIZE` | `100` | items per page of `tools/list` and the other lists |

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CacheScope as RmcpCacheScope, ListPromptsResult, ListResourceTemplatesResult,
        ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams, Prompt,
        ProtocolVersion, Resource, ResourceTemplate, Tool,
    },
    service::RequestContext,
};

use super::{HostedSettings, record};
use crate::request_state::cursor::ListKind;
use crate::{
    auth::Principal,
    env::{ConfigError, Env},
    request_scope::RequestScope,
};

/// How the lists are paged.
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.lists.page_size, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListSettings {
    /// Items per list page (`MCP_PAGE_SIZE`).
    pub page_size: usize,
}

impl ListSettings {
    /// Reads `MCP_PAGE_SIZE`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let page_size = env.number(
            "MCP_PAGE_SIZE",
            100,
            1..=10_000,
            "a whole number of items between 1 and 10000",
        )? as usize;
        Ok(Self { page_size })
    }
}

/// What a list result needs from its request, taken before the handler
/// consumes the request context.
pub(super) struct ListContext {
    modern: bool,
    scope: Option<RequestScope>,
    pub(super) principal: Option<Principal>,
}

impl ListContext {
    pub(super) fn of(context: &RequestContext<RoleServer>) -> Self {
        Self {
            modern: is_modern(context),
            scope: RequestScope::of(context).cloned(),
            principal: Principal::from_request(context),
        }
    }
}

/// Whether the request speaks 2026-07-28 or later (its `_meta` says so).
pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The request the handler sees: the whole list is asked for, we page it.
pub(super) fn strip_cursor(
    request: &Option<PaginatedRequestParams>,
) -> Option<PaginatedRequestParams> {
    request.as_ref().map(|r| {
        let mut r = r.clone();
        r.cursor = None;
        r
    })
}

/// A list result, as the paging path sees it.
pub(super) trait Paged {
    type Item;
    const KIND: ListKind;
    const METHOD: &'static str;
    fn items(&mut self) -> &mut Vec<Self::Item>;
    fn next_cursor(&mut self) -> &mut Option<String>;
    fn cache(&mut self) -> (&mut Option<u64>, &mut Option<RmcpCacheScope>);
    fn meta(&mut self) -> &mut Option<MetaObject>;
}

macro_rules! paged {
    ($result:ty, $item:ty, $items:ident, $kind:expr, $method:literal) => {
        impl Paged for $result {
            type Item = $item;
            const KIND: ListKind = $kind;
            const METHOD: &'static str = $method;
            fn items(&mut self) -> &mut Vec<Self::Item> {
                &mut self.$items
            }
            fn next_cursor(&mut self) -> &mut Option<String> {
                &mut self.next_cursor
            }
            fn cache(&mut self) -> (&mut Option<u64>, &mut Option<RmcpCacheScope>) {
                (&mut self.ttl_ms, &mut self.cache_scope)
            }
            fn meta(&mut self) -> &mut Option<MetaObject> {
                &mut self.meta
            }
        }
    };
}

paged!(ListToolsResult, Tool, tools, ListKind::Tools, "tools/list");
paged!(
    ListPromptsResult,
    Prompt,
    prompts,
    ListKind::Prompts,
    "prompts/list"
);
paged!(
    ListResourcesResult,
    Resource,
    resources,
    ListKind::Resources,
    "resources/list"
);
paged!(
    ListResourceTemplatesResult,
    ResourceTemplate,
    resource_templates,
    ListKind::ResourceTemplates,
    "resources/templates/list"
);

impl HostedSettings {
    /// Finishes a list the handler returned whole: the page the cursor asks
    /// for (unless the handler paged itself: it returned its own `nextCursor`),
    /// the cache hint (`private` when the list depends on the caller), `serverInfo`.
    pub(super) fn page<R: Paged>(
        &self,
        mut result: R,
        request: Option<&PaginatedRequestParams>,
        list: ListContext,
        private: bool,
    ) -> Result<R, ErrorData> {
        if result.next_cursor().is_none() {
            let next = self.cut(R::KIND, request, result.items())?;
            *result.next_cursor() = next;
        }
        let (ttl_ms, mut scope) = self.hint(R::METHOD, list.modern);
        if private && list.modern {
            scope = Some(RmcpCacheScope::Private);
        }
        let (result_ttl, result_scope) = result.cache();
        (*result_ttl, *result_scope) = (ttl_ms, scope);
        record(list.scope.as_ref(), ttl_ms, scope);
        self.stamp(result.meta());
        Ok(result)
    }

    /// Cuts one page out of a full list and returns the cursor of the next page.
    fn cut<T>(
        &self,
        kind: ListKind,
        request: Option<&PaginatedRequestParams>,
        items: &mut Vec<T>,
    ) -> Result<Option<String>, ErrorData> {
        let offset = match request.and_then(|r| r.cursor.as_deref()) {
            None => 0,
            Some(cursor) => self
                .cursors
                .decode(kind, cursor)
                .map(|offset| offset as usize)
                .filter(|offset| *offset <= items.len())
                .ok_or_else(|| ErrorData::invalid_params("Invalid cursor", None))?,
        };
        let end = offset.saturating_add(self.page_size).min(items.len());
        let more = end < items.len();
        items.truncate(end);
        items.drain(..offset);
        Ok(more.then(|| self.cursors.encode(kind, end as u32)))
    }
}
