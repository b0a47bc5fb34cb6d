//! Skills (SEP-2640, `io.modelcontextprotocol/skills` with `directoryRead`): one skill,
//! `skill://fixture-skill/SKILL.md`, with one file in a subdirectory, served through
//! `skills/list`, `skills/get`, `resources/list`, `resources/read` and
//! `resources/directory/read`, as the suite's `sep-2640-skills-enumeration`,
//! `sep-2640-skills-manifest` and `sep-2640-skills-directory` read them: the entry's
//! frontmatter identical to the file's, every file listed once with its digest and size,
//! the subdirectory a child of mime type `inode/directory`, -32602 for a URI that names no
//! skill or no directory.

use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, DIRECTORY_MIME_TYPE, GetSkillResult, ListSkillsResult, ReadResourceDirectoryResult,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Skill, SkillFrontmatter,
    SkillResource, SkillResources,
};

const NAME: &str = "fixture-skill";
const DESCRIPTION: &str = "Answers the MCP conformance suite's skills scenarios.";
/// The skill's directory; its `SKILL.md` and `references/` are its children.
const ROOT: &str = "skill://fixture-skill";
const SKILL_MD: &str = "skill://fixture-skill/SKILL.md";
const REFERENCES: &str = "skill://fixture-skill/references";
const FORMS: &str = "skill://fixture-skill/references/FORMS.md";
const SKILL_MD_TEXT: &str = "---\nname: fixture-skill\ndescription: Answers the MCP conformance suite's skills scenarios.\n---\n\n# Fixture skill\n\nRead `references/FORMS.md` when a form is involved.\n";
const FORMS_TEXT: &str = "# Forms\n\nNothing to fill in.\n";
const MARKDOWN: &str = "text/markdown";
/// How long a client may keep a listing or an entry: the skill never changes.
const TTL_MS: u64 = 60_000;

fn skill() -> Skill {
    Skill::new(
        SKILL_MD,
        SkillFrontmatter::new(NAME, DESCRIPTION),
        SkillResources::Files(vec![
            SkillResource::from_bytes(SKILL_MD, SKILL_MD_TEXT.as_bytes()),
            SkillResource::from_bytes(FORMS, FORMS_TEXT.as_bytes()),
        ]),
    )
}

pub(crate) fn list() -> ListSkillsResult {
    let mut result = ListSkillsResult::with_all_items(vec![skill()]);
    result.ttl_ms = Some(TTL_MS);
    result.cache_scope = Some(CacheScope::Public);
    result
}

pub(crate) fn get(uri: &str) -> Result<GetSkillResult, ErrorData> {
    if uri != SKILL_MD {
        return Err(ErrorData::invalid_params(
            format!("no skill is served at {uri}"),
            None,
        ));
    }
    Ok(GetSkillResult::new(skill())
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Public))
}

/// The skill's `SKILL.md`, among the resources `resources/list` returns (its name and
/// description the frontmatter's, as the manifest scenario expects).
pub(crate) fn listed() -> Resource {
    Resource::new(SKILL_MD, NAME)
        .with_description(DESCRIPTION)
        .with_mime_type(MARKDOWN)
}

/// A skill file's contents, or `None` for a URI that is not one.
pub(crate) fn read(uri: &str) -> Option<ReadResourceResponse> {
    let text = match uri {
        SKILL_MD => SKILL_MD_TEXT,
        FORMS => FORMS_TEXT,
        _ => return None,
    };
    let contents = ResourceContents::text(text, uri).with_mime_type(MARKDOWN);
    Some(ReadResourceResult::new(vec![contents]).into())
}

pub(crate) fn directory(uri: &str) -> Result<ReadResourceDirectoryResult, ErrorData> {
    let file = |uri: &str, name: &str| Resource::new(uri, name).with_mime_type(MARKDOWN);
    let children = match uri.trim_end_matches('/') {
        ROOT => vec![
            file(SKILL_MD, "SKILL.md"),
            Resource::new(REFERENCES, "references").with_mime_type(DIRECTORY_MIME_TYPE),
        ],
        REFERENCES => vec![file(FORMS, "FORMS.md")],
        _ => {
            return Err(ErrorData::invalid_params(
                format!("{uri} is not a directory this server serves"),
                None,
            ));
        }
    };
    Ok(ReadResourceDirectoryResult::with_all_items(children))
}
