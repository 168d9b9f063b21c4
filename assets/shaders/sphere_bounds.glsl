// Shared by sphere_point.vert.glsl and splat.comp.glsl (put in front of them by shaders.c).
// The sphere's extent along one screen axis as slopes u / -z: the two lines from the eye that
// touch the circle of radius r about (cu, cz) in the plane of that axis and the view axis are c
// turned by +-asin(r / |c|); with cos = t / |c| and sin = r / |c| they are, scaled by |c|,
// (t cu -+ r cz, +-r cu + t cz).
vec2 wf_sphere_slopes(float cu, float cz, float r) {
  float t = sqrt(max(cu * cu + cz * cz - r * r, 0.0));
  vec2 a = vec2(t * cu - r * cz, r * cu + t * cz);
  vec2 b = vec2(t * cu + r * cz, -r * cu + t * cz);
  float sa = a.x / -a.y, sb = b.x / -b.y;
  return vec2(min(sa, sb), max(sa, sb));
}
