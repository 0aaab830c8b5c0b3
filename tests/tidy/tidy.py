#!/usr/bin/env python3
# The tidy test: our house rules over a source tree (header comments, file length, no issue
# numbers in comments, the rooms' dependency rule), one line per breach; exit 1 when any.
"""Usage: tidy.py ROOT [--max-lines N] [--exclude DIR ...] [--expect FILE]

Rules, each reported as `path:line: rule: what`:
  header      every source file opens with a comment saying what it is for: C++ (.h .hpp .cc .cpp
              .cu .cuh .h.in) on line 1 (// or /*), CMake (CMakeLists.txt, .cmake) on line 1 (#),
              scripts (a #! line, or .py .sh) on the first line after the #! line (#); the
              comment has at least three words.
  length      a C++ source has at most N lines (--max-lines, default 500), counted as `wc -l`
              does plus a last line without a newline.
  issue       no comment names an issue: `issue 6`, `issues 6 and 7`, `#12` (an `owner/repo#12`
              of another project is allowed). C++ string literals are not comments.
  rooms       a file in impls/ROOM/ includes "impls/OTHER/..." only where OTHER is ROOM or a room
              it uses: the rooms are the collcheck_add_room(NAME ... USES ... PRIVATE_USES ...)
              calls in impls/**/CMakeLists.txt; ROOM reaches its USES and PRIVATE_USES, and from
              each of those their USES (public), transitively. Any file in impls/ includes nothing
              from faults/, properties/ or harness/ (the layers above).
With --expect FILE the breaches found must be exactly the lines of FILE (paths relative to ROOT;
exit 0 when they are): the test of this script on a deliberately bad tree.
"""

import argparse
import os
import re
import sys

CPP_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".h.in")
SCRIPT_SUFFIXES = (".py", ".sh")
# Folders never walked: version control, build trees (as .gitignore names them), caches.
SKIPPED_DIRS = re.compile(r"^(\.git|\.cache|out|build|build-.*)$")
LAYERS_ABOVE = ("faults/", "properties/", "harness/")

ISSUE_WORDS = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)
ISSUE_HASH = re.compile(r"(?<![\w/&])#\d+\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
ROOM_CALL = re.compile(r"(?<![\w(])collcheck_add_room\s*\(([^)]*)\)", re.DOTALL)
ROOM_KEYWORDS = ("SOURCES", "USES", "PRIVATE_USES")


def kind_of(path, first_line):
    """'cpp', 'cmake', 'script' or None (not a source file of ours)."""
    name = os.path.basename(path)
    if name.endswith(CPP_SUFFIXES):
        return "cpp"
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return "cmake"
    if name.endswith(SCRIPT_SUFFIXES) or first_line.startswith("#!"):
        return "script"
    return None


def source_files(root, excluded):
    """(relative path, kind, lines) of every source file under root, sorted by path."""
    found = []
    for directory, subdirs, names in os.walk(root):
        relative_dir = os.path.relpath(directory, root)
        subdirs[:] = sorted(
            d for d in subdirs
            if not SKIPPED_DIRS.match(d) and os.path.normpath(os.path.join(relative_dir, d)) not in excluded)
        for name in sorted(names):
            path = os.path.join(directory, name)
            try:
                with open(path, encoding="utf-8") as stream:
                    text = stream.read()
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: not a source file
            lines = text.splitlines()
            kind = kind_of(path, lines[0] if lines else "")
            if kind:
                found.append((os.path.normpath(os.path.relpath(path, root)), kind, lines))
    return sorted(found)


def cpp_comments(lines):
    """(line number, comment text) of every // and /* */ comment, skipping string and char literals."""
    comments = []
    in_block = False
    for number, line in enumerate(lines, 1):
        position = 0
        text = ""
        quote = None
        while position < len(line):
            char = line[position]
            if in_block:
                end = line.find("*/", position)
                text += line[position:] if end < 0 else line[position:end]
                if end < 0:
                    break
                in_block = False
                position = end + 2
                continue
            if quote:
                if char == "\\":
                    position += 2
                    continue
                if char == quote:
                    quote = None
                position += 1
                continue
            if line.startswith("//", position):
                text += line[position + 2:]
                break
            if line.startswith("/*", position):
                in_block = True
                position += 2
                continue
            if char == "R" and line.startswith('R"', position) and (position == 0 or not line[position - 1].isalnum()):
                opening = line.find("(", position)
                delimiter = line[position + 2:opening]
                closing = line.find(")" + delimiter + '"', opening)
                position = len(line) if closing < 0 or opening < 0 else closing + len(delimiter) + 2
                continue
            if char == '"':
                quote = char
            elif char == "'":
                # A quote after a digit or a letter is a digit separator (1'000), unless it
                # follows a character literal's prefix (u8'x', L'x').
                before = line[:position]
                prefix = re.search(r"(?<![\w])(u8|u|U|L)$", before)
                if not before or not (before[-1].isalnum() or before[-1] == "_") or prefix:
                    quote = char
            position += 1
        if text.strip():
            comments.append((number, text))
    return comments


def hash_comments(lines):
    """(line number, comment text) of every # comment of a CMake file or a script (no strings parsed)."""
    comments = []
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if stripped.startswith("#!") and number == 1:
            continue
        if stripped.startswith("#"):
            comments.append((number, stripped.lstrip("#")))
        elif " #" in line:
            comments.append((number, line[line.index(" #") + 2:]))
    return comments


def check_header(path, kind, lines):
    index = 1 if kind == "script" and lines and lines[0].startswith("#!") else 0
    line = lines[index] if len(lines) > index else ""
    marker = ("//", "/*") if kind == "cpp" else ("#",)
    words = line.lstrip("/*# ").split()
    if not line.startswith(marker) or len(words) < 3:
        where = "line 1" if index == 0 else "the line after #!"
        return [f"{path}:{index + 1}: header: {where} is not a comment saying what the file is for"]
    return []


def check_length(path, kind, lines, max_lines):
    if kind == "cpp" and len(lines) > max_lines:
        return [f"{path}:{len(lines)}: length: {len(lines)} lines, over the limit of {max_lines}"]
    return []


def check_issues(path, kind, lines):
    comments = cpp_comments(lines) if kind == "cpp" else hash_comments(lines)
    found = []
    for number, text in comments:
        match = ISSUE_WORDS.search(text) or ISSUE_HASH.search(text)
        if match:
            found.append(f"{path}:{number}: issue: a comment names an issue ('{match.group(0)}'); "
                         "say what the code does instead")
    return found


def cmake_arguments(text):
    """The arguments of a CMake call, comments dropped, generator expressions reduced to their target."""
    text = re.sub(r"#[^\n]*", "", text)
    arguments = []
    for token in text.split():
        if token.startswith("$<"):  # $<$<BOOL:${HAVE_X}>:target>: the target
            token = token[token.rfind(">:") + 2:].rstrip(">") if ">:" in token else ""
        arguments.append(token)
    return [token for token in arguments if token]


def read_rooms(root, files):
    """{target: (folder, uses, private uses)} from the collcheck_add_room calls of impls/."""
    rooms = {}
    for path, kind, lines in files:
        if kind != "cmake" or not path.startswith("impls" + os.sep):
            continue
        text = "\n".join(re.sub(r"#.*", "", line) for line in lines)
        for call in ROOM_CALL.finditer(text):
            arguments = cmake_arguments(call.group(1))
            if not arguments:
                continue
            lists = {keyword: [] for keyword in ROOM_KEYWORDS}
            current = None
            for argument in arguments[1:]:
                if argument in lists:
                    current = argument
                elif current:
                    lists[current].append(argument)
            folder = os.path.dirname(path).replace(os.sep, "/")
            rooms["collcheck_" + arguments[0]] = (folder + "/", lists["USES"], lists["PRIVATE_USES"])
    return rooms


def reachable(rooms, target):
    """The rooms whose headers target may include: itself, what it uses, and their public uses."""
    _, uses, private_uses = rooms[target]
    seen = {target}
    pending = [used for used in uses + private_uses if used in rooms]
    while pending:
        used = pending.pop()
        if used not in seen:
            seen.add(used)
            pending.extend(public for public in rooms[used][1] if public in rooms)
    return {rooms[room][0] for room in seen}


def check_rooms(files, rooms):
    by_folder = {folder: target for target, (folder, _, _) in rooms.items()}

    def room_of(path):
        """The room folder a path lies in (the longest one that holds it), or None."""
        holding = [folder for folder in by_folder if path.startswith(folder)]
        return max(holding, key=len) if holding else None

    found = []
    for path, kind, lines in files:
        path = path.replace(os.sep, "/")
        if kind != "cpp" or not path.startswith("impls/"):
            continue
        folder = room_of(path)
        allowed = reachable(rooms, by_folder[folder]) if folder else None
        for number, line in enumerate(lines, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            if header.startswith(LAYERS_ABOVE):
                found.append(f"{path}:{number}: rooms: impls/ includes {header}, a layer above it")
            elif header.startswith("impls/") and folder and room_of(header) not in allowed:
                target = by_folder[folder]
                found.append(f"{path}:{number}: rooms: {header} is not of a room that {target} uses "
                             f"(declared in {folder}CMakeLists.txt)")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--max-lines", type=int, default=500)
    parser.add_argument("--exclude", action="append", default=[], help="a folder under ROOT to leave out")
    parser.add_argument("--expect", help="a file listing exactly the breaches expected")
    options = parser.parse_args()

    excluded = {os.path.normpath(folder) for folder in options.exclude}
    files = source_files(options.root, excluded)
    found = []
    for path, kind, lines in files:
        found += check_header(path, kind, lines)
        found += check_length(path, kind, lines, options.max_lines)
        found += check_issues(path, kind, lines)
    found += check_rooms(files, read_rooms(options.root, files))

    if options.expect:
        with open(options.expect, encoding="utf-8") as stream:
            expected = [line.strip() for line in stream if line.strip() and not line.startswith("#")]
        missing = sorted(set(expected) - set(found))
        unexpected = sorted(set(found) - set(expected))
        for line in missing:
            print(f"expected, not found: {line}")
        for line in unexpected:
            print(f"found, not expected: {line}")
        print(f"tidy: {len(found)} breaches found, {len(expected)} expected, "
              f"{len(missing)} missing, {len(unexpected)} unexpected")
        return 1 if missing or unexpected else 0

    for line in found:
        print(line)
    print(f"tidy: {len(files)} source files, {len(found)} breaches" +
          (" (rules: tests/tidy/tidy.py --help)" if found else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
