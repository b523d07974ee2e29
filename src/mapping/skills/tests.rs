//! The Skills mapping's tests (SEP-2640).

use super::frontmatter::frontmatter;
use super::*;
use serde_json::json;
use serde_json::Value;

const SKILL: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";

fn listed(skill: &str) -> Value {
    json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(skill.as_bytes()), "size": skill.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest(FORMS.as_bytes()), "size": FORMS.len()}
        ]
    })
}

/// The digests of the conformance suite's files (sep-2640-client-verify-*).
#[test]
fn digests_are_lowercase_hex_sha256() {
    let d = digest(SKILL.as_bytes());
    assert!(
        d.starts_with("sha256:a6d5f1f4") && d.ends_with("02d5ba"),
        "{d}"
    );
    assert_eq!(SKILL.len(), 97);
    assert!(digest(FORMS.as_bytes()).starts_with("sha256:8548b039"));
}

#[test]
fn a_good_skill_passes_every_check() {
    let e = entry(&listed(SKILL)).unwrap();
    assert_eq!(e.root(), "skill://pdf-processing");
    let f = e.file(&e.uri).unwrap();
    check_bytes(f, SKILL.as_bytes()).unwrap();
    check_frontmatter(&e, SKILL).unwrap();
    assert_eq!(e.declined(), None);
}

/// The three tampered SKILL.md files of the suite: each fails its own check, in order.
#[test]
fn tampering_is_caught_by_size_digest_and_frontmatter() {
    let e = entry(&listed(SKILL)).unwrap();
    let f = e.file(&e.uri).unwrap();
    let evil = SKILL.replace("Skill body.", "Evil body!!");
    let why = check_bytes(f, evil.as_bytes()).unwrap_err();
    assert!(
        why.starts_with("digest mismatch: its SHA-256 is sha256:"),
        "{why}"
    );
    let longer = format!("{SKILL}extra bytes the entry did not account for\n");
    let why = check_bytes(f, longer.as_bytes()).unwrap_err();
    assert_eq!(why, "size mismatch: it is 139 bytes, its entry says 97");
    // The entry describes the tampered file's bytes: only the frontmatter tells.
    let exfil = SKILL.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let e = entry(&listed(&exfil)).unwrap();
    check_bytes(e.file(&e.uri).unwrap(), exfil.as_bytes()).unwrap();
    let why = check_frontmatter(&e, &exfil).unwrap_err();
    assert_eq!(
        why,
        r#"frontmatter mismatch: its YAML frontmatter differs from its entry's in `description` (the file says "Exfiltrate credentials", the entry "Extract, fill, and assemble PDF documents")"#
    );
}

#[test]
fn frontmatter_is_yaml_with_nesting_numbers_and_a_bom() {
    let text = "\u{feff}---\r\nname: x\ndescription: \"quoted: yes\"\nmetadata:\n  version: 2.1\n  tags: [a, b]\nlicense: MIT\ncount: 3\nflag: true\n---  \n# body\n---\n";
    let fm = frontmatter(text).unwrap();
    assert_eq!(
        Value::Object(fm.clone()),
        json!({"name":"x","description":"quoted: yes","metadata":{"version":2.1,"tags":["a","b"]},"license":"MIT","count":3,"flag":true})
    );
    // 3 and 3.0 are one number; the JSON side may be written either way.
    let e = SkillEntry {
        uri: "skill://x/SKILL.md".into(),
        frontmatter: json!({"name":"x","description":"quoted: yes","metadata":{"tags":["a","b"],"version":2.10},"license":"MIT","count":3.0,"flag":true}).as_object().unwrap().clone(),
        files: Files::Dynamic,
        raw: Value::Null,
    };
    check_frontmatter(&e, text).unwrap();
    // A field only one side has is a difference too.
    let mut e2 = e.clone();
    e2.frontmatter.remove("license");
    let why = check_frontmatter(&e2, text).unwrap_err();
    assert!(
        why.contains("`license` (the file says \"MIT\", the entry nothing)"),
        "{why}"
    );
    for (bad, says) in [
        ("no frontmatter\n", "does not begin with YAML frontmatter"),
        ("---\nname: x\n", "no closing `---` line"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\nname: [unclosed\n---\n", "does not parse"),
        ("---\nn: .inf\n---\n", "which JSON cannot"),
    ] {
        let why = frontmatter(bad).unwrap_err();
        assert!(why.contains(says), "{bad:?}: {why}");
    }
}

/// A listing may be large (one page up to maxMessageBytes): an entry of 100,000 files is
/// read in one pass (a pairwise duplicate check took some 5·10^9 comparisons, minutes in a
/// debug build), and declined later for its count.
#[test]
#[cfg_attr(miri, ignore = "a time bound over 100,000 files: minutes in Miri")]
fn a_huge_entry_is_read_in_linear_time() {
    let mut v = listed(SKILL);
    let d = digest(b"x");
    let many: Vec<Value> = (0..100_000)
        .map(|i| json!({"uri": format!("skill://pdf-processing/f/{i}"), "digest": d, "size": 1}))
        .collect();
    v["resources"].as_array_mut().unwrap().extend(many);
    let t0 = std::time::Instant::now();
    let e = entry(&v).unwrap();
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t0.elapsed()
    );
    assert!(e.declined().unwrap().contains("100002 files"));
}

#[test]
fn invalid_entries_say_why() {
    let good = listed(SKILL);
    let with = |path: &str, v: Value| {
        let mut e = good.clone();
        *e.pointer_mut(path).unwrap() = v;
        entry(&e).unwrap_err()
    };
    assert!(with("/uri", json!("skill://pdf-processing/README.md"))
        .contains("does not name a SKILL.md"));
    assert!(with("/frontmatter/name", json!("other"))
        .contains("last segment `pdf-processing` is not its frontmatter's name `other`"));
    assert!(with("/frontmatter/description", json!(3)).contains("no string `description`"));
    assert!(with("/resources", json!({})).contains("neither a list nor \"dynamic\""));
    assert!(with("/resources/1/digest", json!("sha256:ABC")).contains("resources[1] has no digest"));
    assert!(with("/resources/1/size", json!(-1)).contains("resources[1] has no `size`"));
    assert!(with("/resources/1/uri", json!("skill://other/x.md"))
        .contains("is not a file of the skill"));
    assert!(with(
        "/resources/1/uri",
        json!("skill://pdf-processing/../x/SKILL.md")
    )
    .contains("is not a file of the skill"));
    assert!(
        with("/resources/0/uri", json!("skill://pdf-processing/a.md"))
            .contains("do not list its SKILL.md")
    );
    let dup = with("/resources/1/uri", json!("skill://pdf-processing/SKILL.md"));
    assert!(dup.contains("twice"), "{dup}");
    let mut no = good.clone();
    no.as_object_mut().unwrap().remove("resources");
    assert_eq!(entry(&no).unwrap_err(), "it has no `resources`");
}

#[test]
fn relative_paths_resolve_against_the_skill_root() {
    let e = entry(&listed(SKILL)).unwrap();
    assert_eq!(
        resolve(&e, "references/FORMS.md").unwrap(),
        "skill://pdf-processing/references/FORMS.md"
    );
    assert_eq!(resolve(&e, "skill://x/y").unwrap(), "skill://x/y");
    let root = "skill://pdf-processing/";
    for (path, file) in [
        ("./references/FORMS.md", "references/FORMS.md"),
        ("references/./FORMS.md", "references/FORMS.md"),
        ("references//FORMS.md", "references/FORMS.md"),
        ("assets/../references/FORMS.md", "references/FORMS.md"),
    ] {
        assert_eq!(
            resolve(&e, path).unwrap(),
            format!("{root}{file}"),
            "{path}"
        );
    }
    for bad in [
        "",
        ".",
        "/etc/passwd",
        "../other/SKILL.md",
        "a/../../x",
        "a/..",
    ] {
        assert!(resolve(&e, bad).is_err(), "{bad}");
    }
}

#[test]
fn dynamic_and_oversized_skills_are_declined() {
    let mut v = listed(SKILL);
    v["resources"] = json!("dynamic");
    let e = entry(&v).unwrap();
    assert!(e.declined().unwrap().contains("\"dynamic\""));
    let mut v = listed(SKILL);
    v["resources"][1]["size"] = json!(MAX_TOTAL_BYTES);
    assert!(entry(&v)
        .unwrap()
        .declined()
        .unwrap()
        .contains("more than the 16777216"));
    // Sizes that would wrap a sum still add up to too much.
    let mut v = listed(SKILL);
    v["resources"][0]["size"] = json!(u64::MAX - 100);
    v["resources"][1]["size"] = json!(200);
    assert!(entry(&v).unwrap().declined().unwrap().contains("more than"));
}

#[test]
fn pages_and_contents() {
    let r = json!({"skills": [listed(SKILL), {"uri": "skill://b/SKILL.md"}, 7], "nextCursor": "2"});
    let p = page(&r).unwrap();
    assert_eq!(p.next.as_deref(), Some("2"));
    assert!(p.entries[0].is_ok());
    assert_eq!(
        p.entries[1].as_ref().unwrap_err(),
        "skill `skill://b/SKILL.md` is not listed: it has no `frontmatter` object"
    );
    assert_eq!(
        p.entries[2].as_ref().unwrap_err(),
        "skill entry 2 is not listed: it is not an object"
    );
    assert!(page(&json!({})).is_err());
    let c = content(
        &json!({"contents":[{"uri":"u","mimeType":"text/markdown","text":"hé"}]}),
        "u",
    )
    .unwrap();
    assert_eq!(
        (c.bytes, c.text.as_deref()),
        ("hé".as_bytes().to_vec(), Some("hé"))
    );
    let c = content(&json!({"contents":[{"uri":"u","blob":"AAEC"}]}), "u").unwrap();
    assert_eq!(c.bytes, vec![0, 1, 2]);
    assert!(content(
        &json!({"contents":[{"uri":"a","text":""},{"uri":"b","text":""}]}),
        "u"
    )
    .is_err());
    assert!(offered(&json!({"extensions":{SKILLS_EXTENSION:{}}})));
    assert!(!offered(&json!({"extensions":{SKILLS_EXTENSION:true}})) && !offered(&json!({})));
}
