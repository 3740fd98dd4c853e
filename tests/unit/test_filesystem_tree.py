"""The file tree view reads listings as a world model writes them: ls, ls -R, find, tree."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys

import pytest

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.views.file_tree import FILE_SYSTEM_DOMAINS, listing_probe, parse_listing
from agentworld_local.errors import InputError

LS_LA = """\
dev@sandbox:~/todo-api$ ls -la
total 48
drwxr-xr-x 5 dev dev     4096 Mar  3 10:12 .
drwxr-xr-x 8 dev dev     4096 Mar  1 09:00 ..
-rw-r--r-- 1 dev dev      217 Mar  3 10:12 .env
drwxr-xr-x 8 dev dev     4096 Mar  3 10:12 .git
-rw-r--r-- 1 dev dev     1532 Mar  2 18:40 README.md
-rw-r--r-- 1 dev dev 12345678 Jan 15  2024 dump.sql
lrwxrwxrwx 1 dev dev       11 Mar  2 18:40 current -> releases/v2
drwxr-xr-x 2 dev dev     4096 Mar  2 18:40 my notes
dev@sandbox:~/todo-api$ """


def test_ls_la_gives_kinds_and_sizes_and_skips_dot_entries():
    tree = parse_listing(LS_LA, root="/home/dev/todo-api")
    assert tree.paths() == [".env", ".git/", "README.md", "dump.sql", "current", "my notes/"]
    assert tree.find("dump.sql").size == 12345678 and tree.find("dump.sql").kind == "file"
    assert tree.find(".git").kind == "dir"
    assert tree.root.name == "/home/dev/todo-api"


def test_ls_l_with_human_sizes_and_iso_dates():
    text = "-rw-r--r--  1 root root 4.0K 2024-03-01 10:00 a.log\ndrwx------. 2 root root 1.5M 2024-03-01 10:00 cache\n"
    tree = parse_listing(text, root="/var/log")
    assert tree.find("a.log").size == 4096
    assert tree.find("cache").kind == "dir" and tree.find("cache").size == int(1.5 * 1024 * 1024)


def test_ls_laR_sections_nest_under_the_root():
    text = """\
/home/user:
total 12
drwxr-xr-x 3 user user 4096 Mar  3 10:12 .
drwxr-xr-x 3 root root 4096 Mar  1 09:00 ..
drwxr-xr-x 2 user user 4096 Mar  3 10:12 docs
-rw-r--r-- 1 user user  120 Mar  3 10:12 todo.txt

/home/user/docs:
total 8
-rw-r--r-- 1 user user 2048 Mar  3 10:12 spec.md
"""
    tree = parse_listing(text, root="/home/user")
    assert tree.paths() == ["docs/", "docs/spec.md", "todo.txt"]
    assert tree.find("docs/spec.md").size == 2048


def test_plain_ls_R_columns_with_quoted_names():
    text = """\
.:
app.py  README.md  src  'my notes.txt'

./src:
__init__.py  main.py  utils

./src/utils:
helpers.py

./empty:
"""
    tree = parse_listing(text, root="/srv/app")
    assert set(tree.paths()) == {
        "app.py", "README.md", "src/", "src/__init__.py", "src/main.py", "src/utils/", "src/utils/helpers.py",
        "my notes.txt", "empty/",
    }
    assert tree.find("src").kind == "dir" and tree.find("src/main.py").size is None


def test_find_output_with_prompt_and_error_lines():
    text = """\
user@sandbox:~$ find /home/user -maxdepth 3 -type d -printf '%p/\\n' -o -print
/home/user/
/home/user/.bashrc
/home/user/project/
/home/user/project/src/main.py
/home/user/empty/
find: '/home/user/secret': Permission denied
user@sandbox:~$ """
    tree = parse_listing(text, root="/home/user")
    assert tree.paths() == [".bashrc", "project/", "project/src/", "project/src/main.py", "empty/"]
    assert tree.find("empty").kind == "dir" and tree.find("project/src").kind == "dir"
    # Rooted higher up, the same listing keeps its full paths; entries outside a root are dropped.
    assert parse_listing(text, root="/").find("home/user/project/src/main.py").kind == "file"
    assert parse_listing(text, root="/etc").is_empty


def test_relative_find_output():
    tree = parse_listing(".\n./a\n./a/b.txt\n./c.py\n", root="/x")
    assert tree.paths() == ["a/", "a/b.txt", "c.py"]


def test_tree_output_unicode():
    text = """\
.
├── README.md
├── app
│   ├── __init__.py
│   └── models
│       └── user.py
└── tests
    └── test_app.py

3 directories, 4 files
"""
    tree = parse_listing(text, root="/srv")
    assert tree.paths() == ["README.md", "app/", "app/__init__.py", "app/models/", "app/models/user.py", "tests/", "tests/test_app.py"]


def test_tree_output_ascii_with_sizes_and_a_named_root():
    text = """\
/home/dev/todo-api
|-- [       4096]  app
|   `-- [       2210]  main.py
`-- [        120]  README.md
"""
    tree = parse_listing(text, root="/home/dev")
    assert tree.find("todo-api/app/main.py").size == 2210
    assert tree.find("todo-api/app").kind == "dir" and tree.find("todo-api/README.md").size == 120


def test_tree_with_permissions_human_sizes_and_nbsp_indentation():
    text = "project\n├── [drwxr-xr-x 4.0K]  src\n│\u00a0\u00a0 └── [-rw-r--r-- 1.2K]  main.py\n└── [-rw-r--r--  512]  empty_dir_marker\n"
    tree = parse_listing(text, root="/w")
    assert tree.find("project/src").kind == "dir" and tree.find("project/src").size == 4096
    assert tree.find("project/src/main.py").size == 1228


def test_os_observation_with_output_and_an_accessibility_table():
    text = "Output:\n/home/user/notes.txt\n/home/user/Documents/\ntag\tname\ttext\nlabel\tHome\tHome\nDocuments:\tx\n"
    assert parse_listing(text, root="/home/user").paths() == ["notes.txt", "Documents/"]


@pytest.mark.parametrize(
    "garbage",
    ["", "the the the \u2500\u2500 ]]] <html> ///", "Here is the listing:\nNo files found.", "\x00\x1b[31mred\x1b[0m", "a" * 5000,
     "├── orphan\n        └── too deep", ":\n::\n/:"],
)
def test_garbage_gives_a_tree_without_raising(garbage):
    tree = parse_listing(garbage, root="/")
    assert tree.root.name == "/"
    assert "Here" not in "".join(tree.paths())


# -- the probe action -----------------------------------------------------------------


def test_probe_actions_are_valid_actions_of_their_domain():
    terminal = get_domain("terminal").parse_action(listing_probe("terminal", "/home/user"))
    assert terminal.payload[0]["keystrokes"].startswith("find /home/user -maxdepth 3")
    swe = get_domain("swe").parse_action(listing_probe("swe", "/workspace/my repo"))
    assert swe.payload["name"] == "run_shell_command" and "find '/workspace/my repo' -maxdepth 3" in swe.payload["arguments"]["command"]
    os_action = get_domain("os").parse_action(listing_probe("os", "/home/user", depth=2))
    ast.parse(os_action.prompt_text)
    assert "root = '/home/user'" in os_action.prompt_text and "level >= 1" in os_action.prompt_text


def test_domains_without_a_file_system_say_which_domains_have_one():
    for name in set(domain_names()) - set(FILE_SYSTEM_DOMAINS):
        with pytest.raises(InputError) as caught:
            listing_probe(name)
        assert f"The {name} domain has no file system" in caught.value.one_line()
        assert "os, swe, terminal" in caught.value.one_line()


def test_the_probe_listing_format_parses(tmp_path):
    """The shape the probe asks for (dirs with a trailing slash) reads back into the tree."""
    command = json.loads(listing_probe("swe", "/r"))["arguments"]["command"]
    assert "-printf '%p/\\n'" in command
    assert parse_listing("/r/\n/r/a/\n/r/a/b.py\n", root="/r").paths() == ["a/", "a/b.py"]


@pytest.fixture
def real_directory(tmp_path):
    """A small real directory: the probes, run for real on it, must list what is there."""
    root = tmp_path / "proj"
    for relative in ("README.md", "src/app.py", "src/lib/util.py", "src/lib/deep/too_deep.py", "docs/", "my notes/a b.txt"):
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x" * 10)
    expected = ["README.md", "docs/", "my notes/", "my notes/a b.txt", "src/", "src/app.py", "src/lib/",
                "src/lib/deep/", "src/lib/util.py"]
    return root, expected


@pytest.mark.skipif(shutil.which("find") is None, reason="needs GNU find")
def test_the_terminal_probe_run_for_real_lists_the_directory(real_directory):
    root, expected = real_directory
    command = get_domain("terminal").parse_action(listing_probe("terminal", str(root))).payload[0]["keystrokes"]
    output = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout
    assert sorted(parse_listing(output, root=str(root)).paths()) == expected


def test_the_os_probe_run_for_real_lists_the_directory(real_directory):
    """The os probe is only ever text for the model; here we run it once to prove it is right."""
    root, expected = real_directory
    code = get_domain("os").parse_action(listing_probe("os", str(root))).prompt_text
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert sorted(parse_listing(output, root=str(root)).paths()) == expected
