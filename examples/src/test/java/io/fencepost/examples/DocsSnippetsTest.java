package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Code in the docs is code that compiles: every {@code ```java} block in README.md and docs/ is
 * either tagged {@code <!-- snippet: <file>#<name> -->}, and then must equal the region between
 * {@code // snippet: <name>} and {@code // end-snippet: <name>} of that source file (which the build
 * compiles, and a test runs) and followed by a link to that whole file (imports included), or tagged
 * {@code <!-- fragment -->} (an excerpt that is not compiled).
 * A block of any language tagged {@code <!-- file: <path> -->} must equal that whole file (the
 * sample service's files, which the build compiles and tests).
 */
class DocsSnippetsTest {

  private static final Pattern SNIPPET = Pattern.compile("<!-- snippet: (\\S+)#(\\S+) -->");
  private static final String FRAGMENT = "<!-- fragment -->";
  private static final Pattern FILE = Pattern.compile("<!-- file: (\\S+) -->");

  /** A fenced block: its tag (the line before), its code, and the first non-blank line after it. */
  private record Block(Path doc, int line, String tag, String code, String after) {
  }

  @Test
  void everyTaggedSnippetEqualsItsRegionInACompiledSourceFile() throws IOException {
    int checked = 0;
    for (Block b : javaBlocks()) {
      Matcher m = SNIPPET.matcher(b.tag());
      if (!m.matches()) {
        continue;
      }
      Path source = RepoFiles.of(m.group(1));
      assertTrue(Files.exists(source), b.doc() + ":" + b.line() + " names a missing file " + source);
      assertEquals(region(source, m.group(2)), b.code(), b.doc() + ":" + b.line() + " differs from region ["
          + m.group(2) + "] of " + m.group(1) + "; copy the region into the doc");
      checked++;
    }
    assertTrue(checked >= 7, "tagged snippets found: " + checked);
  }

  /** A snippet omits its imports and the rest of its class; the line after it links to the whole file. */
  @Test
  void everySnippetIsFollowedByALinkToItsWholeFile() throws IOException {
    List<String> unlinked = new ArrayList<>();
    for (Block b : javaBlocks()) {
      Matcher m = SNIPPET.matcher(b.tag());
      if (m.matches()) {
        String path = m.group(1);
        String target = (b.doc().getParent().getFileName().toString().equals("docs") ? "../" : "") + path;
        String link = "Whole file, with its imports: [" + Path.of(path).getFileName() + "](" + target + ")";
        if (!b.after().equals(link)) {
          unlinked.add(b.doc().getFileName() + ":" + b.line() + " needs the line [" + link + "] after it, has ["
              + b.after() + "]");
        }
      }
    }
    assertEquals(List.of(), unlinked);
  }

  @Test
  void everyBlockTaggedWithAFileEqualsThatFile() throws IOException {
    int checked = 0;
    for (Block b : blocks(null)) {
      Matcher m = FILE.matcher(b.tag());
      if (m.matches()) {
        Path source = RepoFiles.of(m.group(1));
        assertTrue(Files.exists(source), b.doc() + ":" + b.line() + " names a missing file " + source);
        assertEquals(Files.readString(source), b.code(), b.doc() + ":" + b.line() + " differs from " + m.group(1)
            + "; copy the file into the doc");
        checked++;
      }
    }
    assertTrue(checked >= 6, "blocks tagged with a file: " + checked);
  }

  @Test
  void everyJavaBlockIsASnippetOrMarkedAsAFragment() throws IOException {
    List<String> untagged = new ArrayList<>();
    for (Block b : javaBlocks()) {
      if (!SNIPPET.matcher(b.tag()).matches() && !b.tag().equals(FRAGMENT) && !FILE.matcher(b.tag()).matches()) {
        untagged.add(b.doc().getFileName() + ":" + b.line());
      }
    }
    assertEquals(List.of(), untagged, "java blocks without '<!-- snippet: file#name -->' or '" + FRAGMENT + "'");
  }

  private static List<Block> javaBlocks() throws IOException {
    return blocks("java");
  }

  /** The fenced blocks of README.md and docs/ in {@code language}, or in any language when null. */
  private static List<Block> blocks(String language) throws IOException {
    List<Path> docs = new ArrayList<>();
    docs.add(RepoFiles.of("README.md"));
    try (Stream<Path> files = Files.list(RepoFiles.of("docs"))) {
      files.filter(f -> f.toString().endsWith(".md")).sorted().forEach(docs::add);
    }
    List<Block> out = new ArrayList<>();
    for (Path doc : docs) {
      List<String> lines = Files.readAllLines(doc);
      for (int i = 0; i < lines.size(); i++) {
        String fence = lines.get(i).trim();
        if (!fence.startsWith("```") || fence.equals("```")
            || (language != null && !fence.equals("```" + language))) {
          continue;
        }
        String tag = i > 0 ? lines.get(i - 1).trim() : "";
        StringBuilder code = new StringBuilder();
        int j = i + 1;
        while (j < lines.size() && !lines.get(j).trim().equals("```")) {
          code.append(lines.get(j)).append('\n');
          j++;
        }
        int k = j + 1;
        while (k < lines.size() && lines.get(k).isBlank()) {
          k++;
        }
        out.add(new Block(doc, i + 1, tag, code.toString(), k < lines.size() ? lines.get(k) : ""));
        i = j;
      }
    }
    return out;
  }

  /** The lines between the region's markers (other markers left out), with common indentation removed. */
  private static String region(Path source, String name) throws IOException {
    List<String> lines = Files.readAllLines(source);
    int start = -1;
    int end = -1;
    for (int i = 0; i < lines.size(); i++) {
      String t = lines.get(i).trim();
      if (t.equals("// snippet: " + name)) {
        start = i;
      } else if (t.equals("// end-snippet: " + name) && start >= 0) {
        end = i;
        break;
      }
    }
    if (start < 0 || end < 0) {
      fail(source + " has no region '// snippet: " + name + "' ... '// end-snippet: " + name + "'");
    }
    List<String> body = lines.subList(start + 1, end).stream()
        .filter(l -> !l.trim().startsWith("// snippet: ") && !l.trim().startsWith("// end-snippet: ")).toList();
    int indent = body.stream().filter(l -> !l.isBlank())
        .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
    StringBuilder out = new StringBuilder();
    for (String l : body) {
      out.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    }
    return out.toString();
  }
}
