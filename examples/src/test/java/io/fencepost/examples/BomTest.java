package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The BOM has no parent (a service importing it gets nothing of Fencepost's build), so it repeats
 * the versions the build is tested with: they must be the parent pom's.
 */
class BomTest {

  private static final Pattern PROPERTY = Pattern.compile("<([a-z0-9.-]+\\.version)>([^<]+)</\\1>");

  @Test
  void theBomPinsTheVersionsTheBuildIsTestedWith() throws IOException {
    Map<String, String> bom = properties(Files.readString(RepoFiles.of("bom/pom.xml")));
    Map<String, String> parent = properties(Files.readString(RepoFiles.of("pom.xml")));
    assertTrue(bom.size() >= 7, "the BOM's version properties: " + bom);
    bom.forEach((name, version) -> assertEquals(parent.get(name), version, "bom/pom.xml " + name));
    String bomPom = Files.readString(RepoFiles.of("bom/pom.xml"));
    String parentPom = Files.readString(RepoFiles.of("pom.xml"));
    assertEquals(projectVersion(parentPom), projectVersion(bomPom), "the BOM's own version");
  }

  private static Map<String, String> properties(String pom) {
    Map<String, String> out = new TreeMap<>();
    Matcher m = PROPERTY.matcher(pom.substring(pom.indexOf("<properties>"), pom.indexOf("</properties>")));
    while (m.find()) {
      out.put(m.group(1), m.group(2));
    }
    return out;
  }

  private static String projectVersion(String pom) {
    Matcher m = Pattern.compile("<artifactId>fencepost-(?:parent|bom)</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(pom);
    assertTrue(m.find(), "no project version");
    return m.group(1);
  }
}
